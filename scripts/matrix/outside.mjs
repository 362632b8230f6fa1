// The VM matrix's outside look at a running worker (copied into the initramfs as
// /matrix/outside.mjs; run by /init after strata doctor): starts one worker the way doctor does
// (IsolatedRuntime, sandbox 'auto', the default layers), and while it runs reads, with code of
// its own rather than the runtime's verify-worker, what the kernel shows of it in /proc: each
// thread's Seccomp, Seccomp_filters, NoNewPrivs, CapEff/CapPrm/CapBnd, Uid, Gid and Groups, and
// which namespaces differ from this process's. Prints one JSON object: { observed, reported }.
// Landlock leaves no trace in /proc; it is not observed here.
//
// Usage: node outside.mjs RUNTIME_ENTRY   (the path of @strata/runtime's dist/src/index.js)

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const entry = process.argv[2];
const { IsolatedRuntime } = await import(pathToFileURL(entry).href);

function field(status, name) {
  return new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim().replace(/\s+/g, ' ') ?? null;
}

function observe(pid) {
  const threads = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let status;
    try {
      status = readFileSync(`/proc/${pid}/task/${task}/status`, 'latin1');
    } catch {
      continue;
    }
    threads.push({
      tid: Number(task),
      seccomp: field(status, 'Seccomp'),
      seccompFilters: field(status, 'Seccomp_filters'),
      noNewPrivs: field(status, 'NoNewPrivs'),
      capEff: field(status, 'CapEff'),
      capPrm: field(status, 'CapPrm'),
      capBnd: field(status, 'CapBnd'),
      uid: field(status, 'Uid'),
      gid: field(status, 'Gid'),
      groups: field(status, 'Groups'),
    });
  }
  const namespaces = {};
  for (const ns of ['user', 'mnt', 'net', 'ipc', 'pid', 'uts', 'cgroup']) {
    try {
      namespaces[ns] = readlinkSync(`/proc/${pid}/ns/${ns}`) === readlinkSync(`/proc/self/ns/${ns}`) ? 'shared' : 'own';
    } catch (error) {
      namespaces[ns] = `unreadable (${error.code})`;
    }
  }
  let uidMap = null;
  try {
    uidMap = readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().replace(/\s+/g, ' ');
  } catch (error) {
    uidMap = `unreadable (${error.code})`;
  }
  const distinct = (k) => [...new Set(threads.map((t) => t[k]))];
  return {
    pid,
    threads: threads.length,
    seccomp: distinct('seccomp'),
    seccompFilters: distinct('seccompFilters'),
    noNewPrivs: distinct('noNewPrivs'),
    capEff: distinct('capEff'),
    capPrm: distinct('capPrm'),
    capBnd: distinct('capBnd'),
    uid: distinct('uid'),
    gid: distinct('gid'),
    groups: distinct('groups'),
    namespaces,
    uidMap,
  };
}

let rt;
try {
  rt = await IsolatedRuntime.start({ sandbox: 'auto', prewarm: false });
  const answer = await rt.eval('1 + 1');
  const observed = observe(rt.pid);
  const reported = {
    sandbox: rt.sandbox,
    layers: rt.report.layers.map((l) => ({ name: l.name, enforcement: l.enforcement })),
    verified: rt.report.verified ?? null,
  };
  console.log(JSON.stringify({ answer, observed, reported }));
} catch (error) {
  console.log(JSON.stringify({ error: `${error?.name}: ${error?.message}` }));
  process.exitCode = 1;
} finally {
  await rt?.close();
}
