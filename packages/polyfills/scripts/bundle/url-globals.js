// Injected into every module of the URL bundle: urlpattern-polyfill calls
// `new URL(...)`, and must get whatwg-url's class, not whatever the global
// `URL` is when it runs (the guest may have replaced it).
export { URL } from 'whatwg-url';
