// Package refusal explains what the box refused: it judges a filesystem
// call against the frozen plan (which rule covers the path, and what the
// kernel answers under it), names the smallest policy change that would
// allow each refusal, marked safe or risky, and prints the short summary a
// run with refusals ends with.
//
// It is pure: the plan and the attempt are all it looks at, so every
// answer is table-tested. Package fslog records attempts; package learn
// turns the same advice into a proposed policy.
//
// What does not belong here: seeing the calls (fslog), writing policy
// files (learn), the audit log (event).
package refusal
