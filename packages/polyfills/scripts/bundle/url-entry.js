// Entry of the URL bundle (scripts/bundle.mjs): the classes, returned to the
// installer in src/bootstrap/url.ts, which defines the globals itself.
// urlpattern-polyfill's own entry would install URLPattern on globalThis as a
// side effect; its ./urlpattern export does not.
import { URL, URLSearchParams } from 'whatwg-url';
import { URLPattern } from 'urlpattern-polyfill/urlpattern';

export { URL, URLSearchParams, URLPattern };
