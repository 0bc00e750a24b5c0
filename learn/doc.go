// Package learn turns what a box refused into a proposed policy: for each
// refusal the smallest change that allows it (package refusal), kept only
// when it is safe — never a path a host program runs or obeys later,
// never anything always protected, never a deny entry taken out — and
// written into the project's policy file with a comment saying why, as a
// diff. The proposal is a file like any other project policy: it takes
// effect only once the user trusts it.
//
// It is pure: editing a policy file's text (Edit), diffing it (Diff) and
// choosing the additions (Propose) are table-tested. Running the command
// is package box's.
package learn
