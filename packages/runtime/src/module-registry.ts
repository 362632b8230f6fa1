import { InvalidOption, ModuleNotFound } from './errors.js';
import { describeHostError } from './host-errors.js';

/** Maps an import specifier (and the specifier of the importing module) to a canonical specifier, or refuses with `undefined`. */
export type ModuleResolver = (specifier: string, referrer: string) => string | undefined | null;

/** Returns the source of a module by canonical specifier, or refuses with `undefined`. */
export type ModuleLoader = (specifier: string) => string | undefined | null | Promise<string | undefined | null>;

/** A module the guest may import: its canonical specifier and its source. */
export interface ResolvedModule {
  readonly specifier: string;
  readonly source: string;
}

/** Where a runtime's imports come from. */
export interface ModuleSource {
  /** The module `request` names when imported from `referrer`; throws {@link ModuleNotFound} to refuse. */
  load(request: string, referrer: string): Promise<ResolvedModule>;
}

/**
 * The host's modules: static ones, then an optional resolver (specifier → canonical
 * specifier) and loader (canonical specifier → source). Anything none of them provides is
 * refused. Shared by `Runtime` and `IsolatedRuntime`, whose worker asks its parent.
 */
export class ModuleRegistry implements ModuleSource {
  readonly #static = new Map<string, string>();
  #resolver: ModuleResolver | undefined;
  #loader: ModuleLoader | undefined;

  add(specifier: string, source: string): void {
    if (typeof specifier !== 'string' || specifier === '') throw new InvalidOption('addModule: specifier must be a non-empty string');
    if (typeof source !== 'string') throw new InvalidOption(`addModule(${JSON.stringify(specifier)}): source must be a string`);
    this.#static.set(specifier, source);
  }

  setResolver(resolver: ModuleResolver | undefined): void {
    if (resolver !== undefined && typeof resolver !== 'function') throw new InvalidOption('setModuleResolver: expected a function');
    this.#resolver = resolver;
  }

  setLoader(loader: ModuleLoader | undefined): void {
    if (loader !== undefined && typeof loader !== 'function') throw new InvalidOption('setModuleLoader: expected a function');
    this.#loader = loader;
  }

  async load(request: string, referrer: string): Promise<ResolvedModule> {
    let specifier: unknown;
    try {
      specifier = this.#resolver === undefined ? request : this.#resolver(request, referrer);
    } catch (error) {
      throw failed('resolver', request, error);
    }
    if (typeof specifier !== 'string' || specifier === '') {
      throw new ModuleNotFound(`import ${JSON.stringify(request)} from ${JSON.stringify(referrer)} was refused by the module resolver`);
    }
    let source: unknown = this.#static.get(specifier);
    if (source === undefined && this.#loader !== undefined) {
      try {
        source = await this.#loader(specifier);
      } catch (error) {
        throw failed('loader', specifier, error);
      }
    }
    if (typeof source !== 'string') {
      throw new ModuleNotFound(`import ${JSON.stringify(specifier)} was refused: the host did not register it (addModule, or a module loader)`);
    }
    return { specifier, source };
  }
}

/** A resolver or loader that threw, whatever it threw (a revoked Proxy included), as ModuleNotFound. */
function failed(which: 'resolver' | 'loader', specifier: string, error: unknown): ModuleNotFound {
  const { message } = describeHostError(error, false);
  return new ModuleNotFound(`import ${JSON.stringify(specifier.slice(0, 200))} failed: the module ${which} threw (${message.slice(0, 500)})`, { cause: error });
}
