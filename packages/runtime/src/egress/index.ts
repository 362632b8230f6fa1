/**
 * The parent half of a guest's `fetch`: an egress policy, its pure decisions, and the effects
 * that perform an allowed request. Self-contained; the guest side calls `performRequest` with the
 * guest's request as plain data.
 *
 * @module
 */
export { resolveEgressPolicy, NEVER_METHODS, type EgressPolicy, type ResolvedEgressPolicy } from './egress-policy.js';
export { checkRequest, checkAddresses, type EgressRequest, type EgressDecision, type EgressRefusal, type ResolvedAddress } from './check-request.js';
export { performRequest, type EgressResponse, type HostLookup, type PerformRequestOptions } from './perform-request.js';
export { addressScope, type AddressScope } from './address-scope.js';
export { REDIRECT_STATUSES } from './redirect-plan.js';
export { scrubBody, REDACTED_HEADER, MIN_BODY_SECRET_CHARS, type EgressResponseHook, type EgressResponseContext } from './response-body.js';
