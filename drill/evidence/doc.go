// Package evidence seals drill records so that an auditor can check them:
// the digest of a record's canonical JSON, the hash chain that links each
// record of a topology to the one recorded before it, and a DSSE envelope
// signed with an ed25519 key.
//
// It is pure: it reads no file and contacts no cluster. Package drill
// decides what is sealed and stores it; drctl drill verify-report and drctl
// drill history --verify check it.
//
// DSSE (Dead Simple Signing Envelope, v1) is implemented here on the
// standard library rather than imported: its whole protocol is the
// pre-authentication encoding (PAE, a dozen lines, tested against the
// specification's example) and an ed25519 signature over it. A library
// would add a module and its requirements for those lines; the envelope it
// writes is the same JSON, so any DSSE verifier checks drctl's envelopes.
//
// # Contracts
//
//   - A digest is "sha256:" and the lowercase hex SHA-256 of the exact bytes
//     given. Nothing is decoded or re-encoded before hashing: a record whose
//     bytes changed in any way has another digest.
//   - An envelope verifies only when its payload type is PayloadType and a
//     signature whose key id is the key's verifies over PAE(payloadType,
//     payload). Every failure says why, and wraps ErrInvalid.
//   - VerifyChain judges only what it is given and says what it could not
//     judge: records that carry no link are counted apart as not chained,
//     never as verified; the newest record has no successor to vouch for it,
//     which the report says.
package evidence
