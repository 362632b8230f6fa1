/**
 * The worker's dependency-injection tokens, all in one place. A layer class may ask for
 * {@link LAYER_OPTIONS} in its constructor (`@inject(LAYER_OPTIONS)`); nothing else is
 * injectable into layers, and no layer ever receives the container.
 */
export const LAYER_OPTIONS = Symbol.for('strata.layerOptions');
/** The layer module's default export, registered per layer in a child container. */
export const LAYER_EXPORT = Symbol.for('strata.layerExport');
