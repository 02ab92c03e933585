// Package checker checks histories of operations that clients ran against
// Strata under faults (package tests/chaos records them), the way Jepsen's
// checkers do: a history is a sequence of invocations and completions (ok,
// fail, or info when the outcome is unknown), and a checker reports the
// anomalies it proves from them.
//
//   - ListAppend: Elle's list-append inference (version orders from the
//     longest read, ww/wr/rw dependencies, cycle search) classifying G0,
//     G1a, G1b, G1c, G-single and G2-item; everything but G2-item is
//     forbidden under snapshot isolation (Strata's REPEATABLE READ).
//   - Register: per-key linearizability of reads, writes and
//     compare-and-sets with porcupine; an indeterminate operation may take
//     effect at any time after its invocation, or never.
//   - Bank: every read of all accounts sums to the fixed total, no account
//     missing.
//   - Set: every acknowledged insert is in the final read; nothing appears
//     that was never attempted.
//   - Monotonic: a value read after another read of the same counter
//     completed is never smaller.
//
// Checkers are pure functions of the history: they hold no state and are
// safe for concurrent use. Each is tested on hand-made histories with the
// anomaly it claims to catch.
package checker
