/*
 * strata_deadline.node — the soft timeout of a Strata runtime: one native thread that stops a
 * guest isolate's JavaScript at a deadline, with V8's own TerminateExecution.
 *
 * Why not isolated-vm's `timeout` option: every entry into an isolate with a `timeout` arms a
 * timer on isolated-vm's timer thread, and a finished entry's timer stays queued until its due
 * time. An event loop that enters the isolate once per guest task under one command deadline
 * (a shrinking `timeout`) queues tens of thousands of timers due in the same millisecond, and
 * isolated-vm 7.0.1's timer thread walks the due ones recursively (run_next -> maybe_run_next)
 * until its stack overflows: SIGSEGV. Here an entry only stores a deadline in a slot; the one
 * watcher thread sleeps until the earliest armed deadline. Nothing is queued per entry.
 *
 * Two faces, one shared object:
 *   - in the guest isolate, isolated-vm's NativeModule calls InitForContext, which records the
 *     isolate in a free slot and writes the slot number into the exports object (`slot`), with
 *     `takeRejections` (below) and `bindScriptRunner`, the host's eval in one entry (run_script);
 *   - in Node, a Node-API module:
 *       arm(slot, ms)             stop the slot's isolate `ms` milliseconds (fractional) from now;
 *                                 re-arming replaces the deadline
 *       disarm(slot) -> flags     stop watching; 1: the deadline fired since arm(), 2: a promise
 *                                 was rejected with no handler (see takeRejections below)
 *       cancel(slot)              clear a termination that fired (call once the entry returned)
 *       resume(slot, ms)          after a host function returned inside an entry: clear a
 *                                 termination that fired while it ran (host time is not the
 *                                 guest's), then arm(slot, ms); one call instead of three
 *       release(slot)             forget the isolate (before it is disposed); the slot is reused
 *
 * It also keeps the guest's promises rejected with no handler (see "unhandled rejections" below):
 * disarm() says whether any were left, and the guest's `takeRejections()` hands them over.
 *
 * The watcher calls TerminateExecution only on an armed slot, under the registry lock, and the
 * owner disarms (under the same lock) before it disposes an isolate, so the watcher never touches
 * a disposed isolate. TerminateExecution and CancelTerminateExecution are documented by V8 as
 * callable from any thread without the isolate's lock.
 *
 * C++ because V8's API is C++; everything else is plain: one mutex, one condition variable.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <v8.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Slot {
  v8::Isolate* isolate = nullptr;  // nullptr: free
  bool armed = false;
  bool fired = false;
  Clock::time_point deadline{};
  size_t heap_limit = 0;  // 0: not watched
  bool heap_exceeded = false;
  bool rejections_left = false;  // a promise was rejected with no handler since takeRejections()
};

// Allocated once and never freed: the watcher thread may still wait on the condition variable
// while the process exits, and destroying a condition variable with a waiter hangs glibc's exit.
struct Registry {
  std::mutex lock;
  std::condition_variable wake;
  std::vector<Slot> slots;
  bool watcher_started = false;
  Clock::time_point sleeping_until = Clock::time_point::max();
};
Registry& registry = *new Registry;

void watch() {
  std::unique_lock<std::mutex> held{registry.lock};
  for (;;) {
    const Clock::time_point now = Clock::now();
    Clock::time_point earliest = Clock::time_point::max();
    for (Slot& slot : registry.slots) {
      if (!slot.armed) continue;
      if (slot.deadline <= now) {
        slot.isolate->TerminateExecution();
        slot.fired = true;
        slot.armed = false;
      } else if (slot.deadline < earliest) {
        earliest = slot.deadline;
      }
    }
    registry.sleeping_until = earliest;
    if (earliest == Clock::time_point::max()) {
      registry.wake.wait(held);
    } else {
      registry.wake.wait_until(held, earliest);
    }
  }
}

/* ---- the guest face ------------------------------------------------------------------------ */

uint32_t take_slot(v8::Isolate* isolate) {
  std::lock_guard<std::mutex> held{registry.lock};
  for (uint32_t i = 0; i < registry.slots.size(); i++) {
    if (registry.slots[i].isolate == nullptr) {
      registry.slots[i] = Slot{isolate};
      return i;
    }
  }
  registry.slots.push_back(Slot{isolate});
  return static_cast<uint32_t>(registry.slots.size() - 1);
}

/*
 * The guest's heap limit (limitHeap), enforced from inside V8: after every collection, a heap
 * still larger than the limit stops the guest's JavaScript (TerminateExecution) and marks the
 * slot, so the owner reports a heap limit rather than a timeout. isolated-vm's own memory limit
 * stays as the outer bound; it is set with headroom above this one, because V8 aborts the whole
 * process when an allocation cannot fit in the heap during a collection it cannot interrupt (a
 * Map's table doubling, a large array), which is how a full heap used to become SIGABRT.
 */
void mark_heap_exceeded(v8::Isolate* isolate, uint32_t index) {
  {
    std::lock_guard<std::mutex> held{registry.lock};
    if (index >= registry.slots.size() || registry.slots[index].isolate != isolate) return;
    registry.slots[index].heap_exceeded = true;
  }
  isolate->TerminateExecution();
}

void after_collection(v8::Isolate* isolate, v8::GCType, v8::GCCallbackFlags, void* data) {
  const uint32_t index = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data));
  size_t limit = 0;
  {
    std::lock_guard<std::mutex> held{registry.lock};
    if (index >= registry.slots.size() || registry.slots[index].isolate != isolate || registry.slots[index].heap_exceeded) return;
    limit = registry.slots[index].heap_limit;
  }
  if (limit == 0) return;
  v8::HeapStatistics heap;
  isolate->GetHeapStatistics(&heap);
  if (heap.used_heap_size() > limit) mark_heap_exceeded(isolate, index);
}

// V8 is about to run out of heap: the guest is stopped, and V8 gets room for the allocation in
// progress (half the current limit again) so that it does not abort the process before the
// termination takes effect. V8 calls the callback added last only: this one, added after
// isolated-vm's.
size_t near_heap_limit(void* data, size_t current_heap_limit, size_t /*initial_heap_limit*/) {
  v8::Isolate* isolate = nullptr;
  const uint32_t index = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data));
  {
    std::lock_guard<std::mutex> held{registry.lock};
    if (index < registry.slots.size()) isolate = registry.slots[index].isolate;
  }
  if (isolate != nullptr) mark_heap_exceeded(isolate, index);
  return current_heap_limit + current_heap_limit / 2;
}

/*
 * Unhandled rejections. isolated-vm's own callback keeps the promises rejected with no handler
 * and throws the first still unhandled at the end of every task, in place of the task's result,
 * so a script that left one behind lost its value. This callback replaces it: the promises are
 * kept on the context's global under a private key (no script can reach it), at most
 * kMaxKeptRejections of them and a count of the rest, and the slot is marked so that the owner
 * learns from disarm() that there is something to report. The guest's `takeRejections()` then
 * returns [reasons of those still without a handler, how many more there were] and starts over.
 * Only V8 objects of the isolate's own heap are kept: nothing outlives the isolate.
 */
constexpr uint32_t kMaxKeptRejections = 64;

v8::Local<v8::Private> kept_rejections_key(v8::Isolate* isolate) {
  return v8::Private::ForApi(isolate, v8::String::NewFromUtf8Literal(isolate, "strata.keptRejections"));
}

v8::Local<v8::Private> more_rejections_key(v8::Isolate* isolate) {
  return v8::Private::ForApi(isolate, v8::String::NewFromUtf8Literal(isolate, "strata.moreRejections"));
}

void set_rejections_left(v8::Isolate* isolate, bool left) {
  std::lock_guard<std::mutex> held{registry.lock};
  for (Slot& slot : registry.slots) {
    if (slot.isolate == isolate) slot.rejections_left = left;
  }
}

// Starts a new list: an empty array of kept promises and no count of more.
bool reset_rejections(v8::Isolate* isolate, v8::Local<v8::Context> context) {
  v8::Local<v8::Object> global = context->Global();
  return global->SetPrivate(context, kept_rejections_key(isolate), v8::Array::New(isolate)).FromMaybe(false) &&
         global->SetPrivate(context, more_rejections_key(isolate), v8::Integer::New(isolate, 0)).FromMaybe(false);
}

void on_promise_rejection(v8::PromiseRejectMessage message) {
  if (message.GetEvent() != v8::kPromiseRejectWithNoHandler) return;
  v8::Local<v8::Promise> promise = message.GetPromise();
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::HandleScope scope{isolate};
  v8::Local<v8::Context> context;
  if (!promise->GetCreationContext(isolate).ToLocal(&context)) return;
  v8::Local<v8::Object> global = context->Global();
  v8::Local<v8::Value> kept;
  if (!global->GetPrivate(context, kept_rejections_key(isolate)).ToLocal(&kept) || !kept->IsArray()) return;
  v8::Local<v8::Array> list = kept.As<v8::Array>();
  const uint32_t length = list->Length();
  if (length < kMaxKeptRejections) {
    if (list->CreateDataProperty(context, length, promise).FromMaybe(false) && length == 0) set_rejections_left(isolate, true);
    return;
  }
  v8::Local<v8::Value> more;
  if (!global->GetPrivate(context, more_rejections_key(isolate)).ToLocal(&more) || !more->IsUint32()) return;
  global->SetPrivate(context, more_rejections_key(isolate), v8::Integer::NewFromUnsigned(isolate, more.As<v8::Uint32>()->Value() + 1)).FromMaybe(false);
}

// takeRejections() in the guest: [reasons of the kept promises still without a handler, how many
// more were rejected with none]; starts a new list.
void take_rejections(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::HandleScope scope{isolate};
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  v8::Local<v8::Object> global = context->Global();
  v8::Local<v8::Value> kept;
  v8::Local<v8::Value> more;
  if (!global->GetPrivate(context, kept_rejections_key(isolate)).ToLocal(&kept) || !kept->IsArray() ||
      !global->GetPrivate(context, more_rejections_key(isolate)).ToLocal(&more) || !reset_rejections(isolate, context)) {
    return;  // an exception is pending (the guest is being stopped)
  }
  set_rejections_left(isolate, false);
  v8::Local<v8::Array> list = kept.As<v8::Array>();
  v8::Local<v8::Array> reasons = v8::Array::New(isolate);
  uint32_t count = 0;
  for (uint32_t i = 0; i < list->Length(); i++) {
    v8::Local<v8::Value> element;
    if (!list->Get(context, i).ToLocal(&element)) return;
    if (!element->IsPromise()) continue;
    v8::Local<v8::Promise> promise = element.As<v8::Promise>();
    if (promise->HasHandler() || promise->State() != v8::Promise::kRejected) continue;
    if (!reasons->CreateDataProperty(context, count++, promise->Result()).FromMaybe(false)) return;
  }
  v8::Local<v8::Value> pair[] = {reasons, more->IsUint32() ? more : v8::Integer::New(isolate, 0).As<v8::Value>()};
  info.GetReturnValue().Set(v8::Array::New(isolate, pair, 2));
}

/*
 * The host's eval in one entry. isolated-vm's evalSync hands the completion out either copied
 * (which would silently change what the copy cannot keep: a class instance loses its class) or
 * as a reference (which costs a second entry to check it, and a handle to release): here the
 * script runs and the prelude's finishEval(completion, id) checks it, in the same call, and the
 * host copies what that returns. A native function adds no frame to the guest's stack traces.
 *
 * runScript(source, filename, id): compiles `source` as a classic script named `filename`, as
 * evalSync does (a SyntaxError's message ends in " [filename:line:column]", as isolated-vm's),
 * runs it and the microtasks it queued, and returns finishEval(completion, id). An exception or a
 * termination propagates.
 */
bool decorate_syntax_error(v8::Isolate* isolate, v8::Local<v8::Context> context, const v8::TryCatch& caught) {
  v8::Local<v8::Value> error = caught.Exception();
  v8::Local<v8::Message> message = caught.Message();
  if (!error->IsObject() || message.IsEmpty()) return true;
  v8::Local<v8::String> key = v8::String::NewFromUtf8Literal(isolate, "message");
  v8::Local<v8::Value> text;
  int line = 0;
  if (!error.As<v8::Object>()->Get(context, key).ToLocal(&text) || !message->GetLineNumber(context).To(&line)) return false;
  v8::Local<v8::String> where;
  v8::Local<v8::Value> name = message->GetScriptResourceName();
  char position[48];
  snprintf(position, sizeof position, ":%d:%d]", line, message->GetStartColumn() + 1);
  if (!v8::String::NewFromUtf8(isolate, position).ToLocal(&where)) return false;
  v8::Local<v8::String> decorated = v8::String::Concat(
      isolate,
      v8::String::Concat(isolate, text->IsString() ? text.As<v8::String>() : v8::String::Empty(isolate), v8::String::NewFromUtf8Literal(isolate, " [")),
      v8::String::Concat(isolate, name->IsString() ? name.As<v8::String>() : v8::String::NewFromUtf8Literal(isolate, "<isolated-vm>"), where));
  return error.As<v8::Object>()->Set(context, key, decorated).FromMaybe(false);
}

void run_script(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  if (info.Length() != 3 || !info[0]->IsString() || !info[1]->IsString() || !info.Data()->IsFunction()) {
    isolate->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8Literal(isolate, "runScript(source, filename, id)")));
    return;
  }
  v8::ScriptOrigin origin{info[1]};
  v8::ScriptCompiler::Source source{info[0].As<v8::String>(), origin};
  v8::Local<v8::Script> script;
  {
    v8::TryCatch caught{isolate};
    if (!v8::ScriptCompiler::Compile(context, &source).ToLocal(&script)) {
      if (caught.CanContinue() && caught.HasCaught() && !decorate_syntax_error(isolate, context, caught)) return;
      caught.ReThrow();
      return;
    }
  }
  v8::Local<v8::Value> completion;
  if (!script->Run(context).ToLocal(&completion)) return;
  // The microtasks the script queued run now, as they do at the end of evalSync's run: after the
  // check they could change what the copy takes (a class instance put where the walk saw a number).
  isolate->PerformMicrotaskCheckpoint();
  if (isolate->IsExecutionTerminating()) return;
  v8::Local<v8::Value> finish_args[] = {completion, info[2]};
  v8::Local<v8::Value> reply;
  if (info.Data().As<v8::Function>()->Call(context, v8::Undefined(isolate), 2, finish_args).ToLocal(&reply)) info.GetReturnValue().Set(reply);
}

// bindScriptRunner(finishEval) in the guest: runScript bound to the prelude's finishEval.
void bind_script_runner(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Function> runner;
  if (info.Length() != 1 || !info[0]->IsFunction()) {
    isolate->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8Literal(isolate, "bindScriptRunner(finishEval)")));
    return;
  }
  if (v8::Function::New(isolate->GetCurrentContext(), run_script, info[0], 3).ToLocal(&runner)) info.GetReturnValue().Set(runner);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void InitForContext(v8::Isolate* isolate, v8::Local<v8::Context> context, v8::Local<v8::Object> target) {
  const uint32_t slot = take_slot(isolate);
  v8::Local<v8::String> key = v8::String::NewFromUtf8Literal(isolate, "slot");
  if (target->Set(context, key, v8::Integer::NewFromUnsigned(isolate, slot)).IsNothing()) {
    std::lock_guard<std::mutex> held{registry.lock};
    registry.slots[slot] = Slot{};
    return;
  }
  // The callbacks live as long as the isolate; they find their slot by index and act only while
  // it still holds this isolate (release() empties it before the isolate is disposed).
  void* data = reinterpret_cast<void*>(static_cast<uintptr_t>(slot));
  isolate->AddGCEpilogueCallback(after_collection, data, v8::kGCTypeAll);
  isolate->AddNearHeapLimitCallback(near_heap_limit, data);
  // Without `takeRejections` in the exports the owner refuses to start (it would lose reports).
  v8::Local<v8::Function> take;
  if (!reset_rejections(isolate, context) || !v8::Function::New(context, take_rejections).ToLocal(&take) ||
      target->Set(context, v8::String::NewFromUtf8Literal(isolate, "takeRejections"), take).IsNothing()) {
    return;
  }
  // Without `bindScriptRunner` the owner refuses to start (see run_script).
  v8::Local<v8::Function> bind;
  if (!v8::Function::New(context, bind_script_runner).ToLocal(&bind) ||
      target->Set(context, v8::String::NewFromUtf8Literal(isolate, "bindScriptRunner"), bind).IsNothing()) {
    return;
  }
  isolate->SetPromiseRejectCallback(on_promise_rejection);
}

/* ---- the Node face ------------------------------------------------------------------------- */

namespace {

napi_value fail(napi_env env, const char* message) {
  napi_throw_error(env, "ERR_STRATA_DEADLINE", message);
  return nullptr;
}

// Reads argument `index` as a uint32; false (with a JS error thrown) when it is not one.
bool read_u32(napi_env env, napi_value value, uint32_t* out) {
  double number = -1;
  if (napi_get_value_double(env, value, &number) != napi_ok || !(number >= 0 && number <= 4294967295.0) || number != static_cast<double>(static_cast<uint32_t>(number))) {
    fail(env, "strata_deadline: expected an integer from 0 to 2^32-1");
    return false;
  }
  *out = static_cast<uint32_t>(number);
  return true;
}

// The slot named by the first argument, with the registry locked by `held`; nullptr (with a JS
// error thrown) when it is not a slot in use.
Slot* slot_argument(napi_env env, napi_value* argv, size_t argc, std::unique_lock<std::mutex>& held) {
  uint32_t index = 0;
  if (argc < 1 || !read_u32(env, argv[0], &index)) {
    if (argc < 1) fail(env, "strata_deadline: expected a slot");
    return nullptr;
  }
  held.lock();
  if (index >= registry.slots.size() || registry.slots[index].isolate == nullptr) {
    held.unlock();
    fail(env, "strata_deadline: no isolate is registered in that slot");
    return nullptr;
  }
  return &registry.slots[index];
}

// Arms `slot` (the registry locked) `ms` milliseconds from now.
void arm_locked(Slot* slot, double ms) {
  if (!registry.watcher_started) {
    std::thread(watch).detach();
    registry.watcher_started = true;
  }
  slot->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>{ms});
  slot->armed = true;
  slot->fired = false;
  // The watcher wakes by itself at the deadline it sleeps until; only an earlier one needs it now.
  if (slot->deadline < registry.sleeping_until) {
    registry.sleeping_until = slot->deadline;
    registry.wake.notify_one();
  }
}

// arm(slot, ms) and resume(slot, ms): the slot, locked by `held`, and `ms`; nullptr (with a JS
// error thrown) when either is wrong.
Slot* slot_and_ms(napi_env env, napi_callback_info info, std::unique_lock<std::mutex>& held, double* ms) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) return nullptr;
  // At most ~31 years: far beyond any timeout, and small enough for the clock's arithmetic.
  if (argc < 2 || napi_get_value_double(env, argv[1], ms) != napi_ok || !(*ms >= 0 && *ms <= 1e12)) {
    fail(env, "strata_deadline: (slot, ms) needs ms from 0 to 1e12");
    return nullptr;
  }
  return slot_argument(env, argv, argc, held);
}

napi_value arm(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  double ms = -1;
  Slot* slot = slot_and_ms(env, info, held, &ms);
  if (slot != nullptr) arm_locked(slot, ms);
  return nullptr;
}

napi_value resume(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  double ms = -1;
  Slot* slot = slot_and_ms(env, info, held, &ms);
  if (slot == nullptr) return nullptr;
  // No guest JavaScript ran since it fired: the host function did, so the termination is cleared.
  if (slot->fired) slot->isolate->CancelTerminateExecution();
  arm_locked(slot, ms);
  return nullptr;
}

// disarm(slot), cancel(slot) and release(slot): the slot, locked by `held`; nullptr (with a JS
// error thrown) when it is wrong.
Slot* slot_only(napi_env env, napi_callback_info info, std::unique_lock<std::mutex>& held) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) return nullptr;
  return slot_argument(env, argv, argc, held);
}

// disarm(slot) -> flags: 1 the deadline fired since arm(), 2 a promise was rejected with no
// handler since the guest last called takeRejections().
napi_value disarm(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  Slot* slot = slot_only(env, info, held);
  if (slot == nullptr) return nullptr;
  const uint32_t flags = (slot->fired ? 1u : 0u) | (slot->rejections_left ? 2u : 0u);
  slot->armed = false;
  slot->fired = false;
  held.unlock();
  napi_value result;
  napi_create_uint32(env, flags, &result);
  return result;
}

napi_value cancel(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  Slot* slot = slot_only(env, info, held);
  if (slot == nullptr) return nullptr;
  slot->isolate->CancelTerminateExecution();
  return nullptr;
}

napi_value release(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  Slot* slot = slot_only(env, info, held);
  if (slot == nullptr) return nullptr;
  *slot = Slot{};
  return nullptr;
}

// limitHeap(slot, bytes): stop the slot's isolate once its heap is larger than `bytes` after a collection.
napi_value limit_heap(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  double bytes = -1;
  Slot* slot = slot_and_ms(env, info, held, &bytes);
  if (slot != nullptr) slot->heap_limit = static_cast<size_t>(bytes);
  return nullptr;
}

// heapExceeded(slot) -> whether the heap limit stopped the slot's isolate.
napi_value heap_exceeded(napi_env env, napi_callback_info info) {
  std::unique_lock<std::mutex> held{registry.lock, std::defer_lock};
  Slot* slot = slot_only(env, info, held);
  if (slot == nullptr) return nullptr;
  const bool exceeded = slot->heap_exceeded;
  held.unlock();
  napi_value result;
  napi_get_boolean(env, exceeded, &result);
  return result;
}

bool export_function(napi_env env, napi_value exports, const char* name, napi_callback fn) {
  napi_value function;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, nullptr, &function) == napi_ok &&
         napi_set_named_property(env, exports, name, function) == napi_ok;
}

}  // namespace

NAPI_MODULE_INIT() {
  if (!export_function(env, exports, "arm", arm) || !export_function(env, exports, "disarm", disarm) ||
      !export_function(env, exports, "cancel", cancel) || !export_function(env, exports, "resume", resume) ||
      !export_function(env, exports, "release", release) || !export_function(env, exports, "limitHeap", limit_heap) ||
      !export_function(env, exports, "heapExceeded", heap_exceeded)) {
    return nullptr;
  }
  return exports;
}
