// Package provider knows the agent CLIs that agentbox puts in a box: their
// command names, whether each one is supported inside the sandbox (earned by a
// real run, never assumed), the paths of their own they must write, the control
// files in a project that must stay read-only, the network domains they need,
// and the argument adjustments made when they run confined. It feeds policy
// resolution and never touches mounts itself.
package provider
