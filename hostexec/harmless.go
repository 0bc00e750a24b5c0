package hostexec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The readers here judge a control file the box made with the grammar of
// the program that reads it (YAML for Yarn's .yarnrc.yml, TOML for
// rustup's files), and by an allow list of what may be in it: what the
// parser cannot read, or reads as anything but the known keys, is not
// harmless.

// yarnSafeKeys are the .yarnrc.yml settings that name no program, no file
// of code or settings, and loosen nothing (no registry, no TLS or script
// switch, no folder Yarn reads packages from): display, linker and
// concurrency settings. yarnPath, plugins, injectEnvironmentFiles,
// packageExtensions, registries, folders and every setting Yarn adds
// later are not.
var yarnSafeKeys = set("nodeLinker", "nmMode", "nmHoistingLimits", "nmSelfReferences", "pnpMode",
	"pnpFallbackMode", "pnpEnableInlining", "compressionLevel", "enableTelemetry", "enableGlobalCache",
	"enableColors", "enableHyperlinks", "enableMessageNames", "enableProgressBars", "enableTimers",
	"enableInlineBuilds", "enableInlineHunks", "enableImmutableInstalls", "enableImmutableCache",
	"enableHardenedMode", "defaultSemverRangePrefix", "preferInteractive", "preferTruncatedLines",
	"preferReuse", "progressBarStyle", "networkConcurrency", "httpRetry", "httpTimeout",
	"taskPoolConcurrency", "cloneConcurrency", "telemetryInterval", "initScope", "changesetBaseRefs",
	"defaultLanguageName", "logFilters", "supportedArchitectures", "tsEnableAutoTypes",
	"cacheMigrationMode", "enableOfflineMode", "preferDeferredVersions", "winLinkType")

// YarnrcYMLHarmless reports whether a .yarnrc.yml makes Yarn run nothing
// of the box's: it is one YAML document (or none) whose top level is a
// mapping of plain keys from yarnSafeKeys, each once, as YAML decodes them
// (quotes, escapes, tags, "? key" and flow mappings are all decoded first),
// with no merge key and no alias standing for a key.
func YarnrcYMLHarmless(data []byte) bool {
	if len(data) > 64<<10 {
		return false
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		// An empty file is no document at all.
		return strings.TrimSpace(stripYAMLComments(string(data))) == ""
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil || err.Error() != "EOF" {
		return false // a second document, or one YAML cannot read
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		return true
	}
	if m.Kind != yaml.MappingNode {
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || !yarnSafeKeys[k.Value] || seen[k.Value] {
			return false
		}
		seen[k.Value] = true
	}
	// Every key, the safe ones included, decodes the same way into a map.
	var plain map[string]any
	if err := yaml.Unmarshal(data, &plain); err != nil {
		return false
	}
	for k := range plain {
		if !yarnSafeKeys[k] {
			return false
		}
	}
	return true
}

// stripYAMLComments drops "#" comments at the start of lines.
func stripYAMLComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// yarn1SafeKeys are the Yarn 1 .yarnrc settings that run nothing and
// loosen nothing.
var yarn1SafeKeys = set("lastUpdateCheck", "disable-self-update-check", "network-timeout", "network-concurrency",
	"child-concurrency", "save-prefix", "save-exact", "ignore-engines", "no-progress", "version-tag-prefix",
	"version-git-message", "version-commit-hooks", "version-git-tag")

// yarn1Line is a "key value" line of Yarn 1's .yarnrc at the top level:
// an unquoted key and a plain value.
var yarn1Line = lazyRegexp(`^([A-Za-z][A-Za-z0-9-]*)[ \t]+("[A-Za-z0-9._+~^<>=@% -]*"|[A-Za-z0-9._+~^<>=@%-]+)[ \t]*$`)

// YarnrcHarmless reports whether a Yarn 1 .yarnrc makes Yarn run nothing:
// every line is blank, a comment, or a top-level "key value" of
// yarn1SafeKeys (no nesting, no quoted keys, no --flag lines).
func YarnrcHarmless(data []byte) bool {
	if len(data) > 64<<10 {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := yarn1Line().FindStringSubmatch(line)
		if m == nil || !yarn1SafeKeys[m[1]] {
			return false
		}
	}
	return true
}

// toolchainName is a rustup toolchain or channel name, a component or a
// target: a name, never a path.
var toolchainName = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// RustToolchainHarmless reports whether a rust-toolchain.toml (isTOML) or
// a legacy rust-toolchain file names a toolchain without a path. A legacy
// file is read as rustup reads it: one line naming a channel, or else
// TOML. The TOML may hold only [toolchain] with channel, components,
// targets and profile, each a name.
func RustToolchainHarmless(data []byte, isTOML bool) bool {
	if len(data) > 64<<10 {
		return false
	}
	text := string(data)
	if !isTOML {
		if line := strings.TrimSpace(text); !strings.Contains(line, "\n") && toolchainName().MatchString(line) && !strings.Contains(line, "..") {
			return true
		}
		// Anything else in a legacy file that names a path, even in what
		// TOML reads as a comment, is not judged: rustup's reading of a
		// legacy file is not TOML's alone.
		if strings.ContainsAny(text, "/\\") {
			return false
		}
	}
	var doc map[string]any
	if err := decodeTOML(text, &doc); err != nil {
		return false
	}
	for k, v := range doc {
		t, ok := v.(map[string]any)
		if k != "toolchain" || !ok {
			return false
		}
		for tk, tv := range t {
			switch tk {
			case "channel", "profile":
				s, ok := tv.(string)
				if !ok || !toolchainName().MatchString(s) || strings.Contains(s, "..") {
					return false
				}
			case "components", "targets":
				list, ok := tv.([]any)
				if !ok {
					return false
				}
				for _, e := range list {
					s, ok := e.(string)
					if !ok || !toolchainName().MatchString(s) {
						return false
					}
				}
			default:
				return false
			}
		}
	}
	return true
}

// yarnValues returns what a .yarnrc.yml names that Yarn runs or loads:
// yarnPath, and each plugin's path (a string, or a mapping's path). When
// YAML cannot read the file, the line reader's answer stands in (Yarn
// refuses such a file, so this only keeps more).
func yarnValues(data []byte) []string {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return yamlValues(data, "yarnPath", "yarn-path", "path")
	}
	var out []string
	if s, ok := doc["yarnPath"].(string); ok {
		out = append(out, s)
	}
	if list, ok := doc["plugins"].([]any); ok {
		for _, e := range list {
			switch x := e.(type) {
			case string:
				out = append(out, x)
			case map[string]any:
				if s, ok := x["path"].(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	if files, ok := doc["injectEnvironmentFiles"].([]any); ok {
		for _, e := range files {
			if s, ok := e.(string); ok {
				out = append(out, strings.TrimSuffix(s, "?"))
			}
		}
	}
	return out
}
