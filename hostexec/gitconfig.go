package hostexec

import (
	"strings"
)

// ConfigVar is one variable of a git config file.
type ConfigVar struct {
	// Section and Key are lower case; Sub is the subsection, case kept
	// ("remote", "origin", "url").
	Section, Sub, Key string
	// Value is the value after git's unquoting; Bool is true for a key
	// given without "=" (git reads it as true).
	Value string
	Bool  bool
}

// Name is the variable's full name: section.sub.key, or section.key.
func (v ConfigVar) Name() string {
	if v.Sub != "" {
		return v.Section + "." + v.Sub + "." + v.Key
	}
	return v.Section + "." + v.Key
}

// ParsedConfig is what ParseConfig made of a git config file.
type ParsedConfig struct {
	Vars []ConfigVar
	// Plain is true when every line had the plain form git writes itself
	// (a header alone on its line, "key = value", comments): then what git
	// reads is exactly Vars. Anything else (continuation lines, a key on a
	// header's line, old-style [a.b] headers, control characters, lines
	// the parser could not read) makes it false, and a config that is not
	// plain is rewritten from Vars rather than trusted as it is.
	Plain bool
}

// ParseConfig reads a git config file the way git does (config.c), well
// enough to find every variable a plain file sets; see ParsedConfig.Plain
// for what happens when it is not plain.
func ParseConfig(data []byte) ParsedConfig {
	p := &cfgParser{s: string(data), plain: true}
	p.parse()
	return ParsedConfig{Vars: p.vars, Plain: p.plain}
}

type cfgParser struct {
	s       string
	i       int
	section string
	sub     string
	inSec   bool
	vars    []ConfigVar
	plain   bool
	line    bool // something other than blanks was read on this line
}

func (p *cfgParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *cfgParser) eof() bool { return p.i >= len(p.s) }

func (p *cfgParser) parse() {
	if strings.HasPrefix(p.s, "\xef\xbb\xbf") {
		p.i = 3
		p.plain = false
	}
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\n':
			p.i++
			p.line = false
		case c == ' ' || c == '\t':
			p.i++
		case c == '\r':
			p.i++
			p.plain = false
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			if p.line {
				p.plain = false
			}
			p.line = true
			if !p.header() {
				p.plain = false
				p.skipLine()
				p.inSec = false
			}
		case isAlpha(c):
			if p.line {
				p.plain = false // a key after a header on the same line
			}
			p.line = true
			if !p.variable() {
				p.plain = false
				p.skipLine()
			}
		default:
			p.plain = false
			p.skipLine()
		}
	}
}

func (p *cfgParser) skipLine() {
	for !p.eof() && p.s[p.i] != '\n' {
		if p.s[p.i] < 0x20 && p.s[p.i] != '\t' {
			p.plain = false
		}
		p.i++
	}
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

// header reads "[section]", "[section "sub"]" or the old "[section.sub]".
func (p *cfgParser) header() bool {
	p.i++ // [
	start := p.i
	for !p.eof() && (isAlnum(p.s[p.i]) || p.s[p.i] == '-' || p.s[p.i] == '.') {
		p.i++
	}
	name := strings.ToLower(p.s[start:p.i])
	if name == "" {
		return false
	}
	switch p.peek() {
	case ']':
		p.i++
		if dot := strings.IndexByte(name, '.'); dot >= 0 {
			// Old style: the subsection is what follows the first dot.
			p.plain = false
			p.section, p.sub = name[:dot], name[dot+1:]
		} else {
			p.section, p.sub = name, ""
		}
		p.inSec = true
		return true
	case ' ', '\t':
		if strings.Contains(name, ".") {
			return false
		}
		for p.peek() == ' ' || p.peek() == '\t' {
			p.i++
		}
		if p.peek() != '"' {
			return false
		}
		p.i++
		var sub strings.Builder
		for {
			if p.eof() || p.s[p.i] == '\n' || p.s[p.i] == 0 {
				return false
			}
			c := p.s[p.i]
			p.i++
			if c == '"' {
				break
			}
			if c == '\\' {
				if p.eof() || p.s[p.i] == '\n' {
					return false
				}
				c = p.s[p.i]
				p.i++
			}
			sub.WriteByte(c)
		}
		if p.peek() != ']' {
			return false
		}
		p.i++
		p.section, p.sub, p.inSec = name, sub.String(), true
		if p.sub == "" {
			// git names it section..key; Vars cannot tell it from
			// [section], so it is rewritten as that.
			p.plain = false
		}
		return true
	}
	return false
}

// variable reads "key", "key = value" up to the end of its (last) line.
func (p *cfgParser) variable() bool {
	start := p.i
	for !p.eof() && (isAlnum(p.s[p.i]) || p.s[p.i] == '-') {
		p.i++
	}
	key := strings.ToLower(p.s[start:p.i])
	for p.peek() == ' ' || p.peek() == '\t' {
		p.i++
	}
	if !p.inSec {
		return false
	}
	v := ConfigVar{Section: p.section, Sub: p.sub, Key: key}
	switch {
	case p.eof() || p.peek() == '\n':
		// git's get_value: the end of the line (or file) right after
		// the name and blanks is a boolean; a comment there ("bare #
		// c") is a bad config line that makes git refuse the file.
		v.Bool = true
	case p.peek() == '\r' && strings.HasPrefix(p.s[p.i:], "\r\n"):
		v.Bool = true
		p.plain = false
		p.i++
	case p.peek() == '=':
		p.i++
		val, ok := p.value()
		if !ok {
			return false
		}
		v.Value = val
	default:
		return false
	}
	p.vars = append(p.vars, v)
	return true
}

// value reads a value the way git's parse_value does: quotes toggle,
// backslash escapes (n, t, b, \, ") and continues a line, # and ; outside
// quotes start a comment, and blanks at the end outside quotes are dropped.
func (p *cfgParser) value() (string, bool) {
	var b strings.Builder
	quoted := false
	pendingSpace := 0
	comment := false
	for {
		if p.eof() {
			// git reads the end of the file as the end of a line.
			if quoted {
				return "", false
			}
			break
		}
		c := p.s[p.i]
		if c == '\n' {
			if quoted {
				return "", false
			}
			break
		}
		p.i++
		if comment {
			continue
		}
		if c == 0 || c < 0x20 && c != '\t' {
			p.plain = false
			if c == '\r' {
				continue
			}
			return "", false
		}
		if !quoted && (c == ' ' || c == '\t') {
			if b.Len() > 0 {
				pendingSpace++
			}
			continue
		}
		if !quoted && (c == '#' || c == ';') {
			comment = true
			continue
		}
		for ; pendingSpace > 0; pendingSpace-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
			continue
		case '\\':
			if p.eof() {
				return "", false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '\n':
				p.plain = false // a continuation line
				continue
			case 'n':
				b.WriteByte('\n')
				p.plain = false
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
				p.plain = false
			case '\\', '"':
				b.WriteByte(e)
			default:
				return "", false
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// safeKeys are the git config variables a box-written config may keep:
// data git stores, none of which names a program, a hook, a file to
// include or a folder to work in. Everything else (core.fsmonitor,
// core.hooksPath, core.sshCommand, core.pager, core.editor, alias.*,
// diff/merge/filter drivers, credential helpers, include.path, ...) is
// left out when the config is rewritten. An allowlist, not a denylist:
// git and its helpers add keys that run programs over time.
var safeKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.autocrlf": true, "core.safecrlf": true, "core.eol": true,
	"core.checkstat": true, "core.trustctime": true, "core.quotepath": true,
	"core.compression": true, "core.loosecompression": true, "core.bigfilethreshold": true,
	"core.untrackedcache": true, "core.splitindex": true, "core.commitgraph": true,
	"core.multipackindex": true, "core.sparsecheckout": true, "core.sparsecheckoutcone": true,
	"core.preloadindex": true, "core.abbrev": true, "core.whitespace": true,
	"core.longpaths": true, "core.protecthfs": true, "core.protectntfs": true,
	"extensions.objectformat": true, "extensions.refstorage": true, "extensions.noop": true,
	"extensions.preciousobjects": true, "extensions.partialclone": true, "extensions.worktreeconfig": true,
	"user.name": true, "user.email": true, "author.name": true, "author.email": true,
	"committer.name": true, "committer.email": true,
	"init.defaultbranch": true,
	"pull.rebase":        true, "pull.ff": true,
	"push.default": true, "push.autosetupremote": true, "push.followtags": true,
	"fetch.prune": true, "fetch.prunetags": true, "fetch.recursesubmodules": true, "fetch.writecommitgraph": true,
	"gc.auto": true, "gc.autodetach": true, "gc.autopacklimit": true,
	"index.version": true, "index.sparse": true,
	"rerere.enabled": true, "rerere.autoupdate": true,
	"merge.conflictstyle": true, "merge.ff": true,
	"diff.algorithm": true, "diff.renames": true,
	"status.showuntrackedfiles": true, "status.submodulesummary": true,
	"color.ui":       true,
	"commit.gpgsign": true, "tag.gpgsign": true,
	"lfs.repositoryformatversion": true,
	"maintenance.auto":            true,
}

// safeSubKeys are the per-subsection keys a box-written config may keep.
var safeSubKeys = map[string]bool{
	"remote.url": true, "remote.pushurl": true, "remote.fetch": true, "remote.push": true,
	"remote.mirror": true, "remote.tagopt": true, "remote.prune": true, "remote.prunetags": true,
	"remote.promisor": true, "remote.partialclonefilter": true, "remote.skipdefaultupdate": true,
	"remote.skipfetchall": true,
	"branch.remote":       true, "branch.pushremote": true, "branch.merge": true, "branch.rebase": true,
	"branch.description": true,
	"submodule.url":      true, "submodule.active": true, "submodule.branch": true,
	"submodule.fetchrecursesubmodules": true, "submodule.ignore": true, "submodule.shallow": true,
}

// lfsFilter is what `git lfs install --local` writes: kept, value for value.
var lfsFilter = map[string]string{
	"clean": "git-lfs clean -- %f", "smudge": "git-lfs smudge -- %f",
	"process": "git-lfs filter-process", "required": "true",
}

// Safe reports whether a box-written config may keep v. inTree says
// whether a folder (for core.worktree) lies where the box may write
// anyway; nil refuses every core.worktree. A value or subsection holding
// a control character other than a tab (a newline, a backspace, a
// carriage return) is never kept, whatever its name: git reads it, but a
// program that reads `git config --list` line by line, or a terminal that
// shows it, sees something else.
func Safe(v ConfigVar, inTree func(string) bool) bool {
	if hasControl(v.Value) || hasControl(v.Sub) {
		return false
	}
	if v.Sub == "" {
		if v.Section == "core" && v.Key == "worktree" {
			return inTree != nil && !v.Bool && inTree(v.Value)
		}
		return safeKeys[v.Section+"."+v.Key]
	}
	switch {
	case v.Section == "alias":
		return false
	case v.Section == "submodule" && v.Key == "update":
		switch v.Value {
		case "checkout", "rebase", "merge", "none":
			return true
		}
		return false
	case v.Section == "filter" && v.Sub == "lfs":
		want, ok := lfsFilter[v.Key]
		return ok && (v.Value == want || v.Bool && want == "true")
	case v.Section == "remote" || v.Section == "submodule":
		// A transport git runs a program for: only names git handles
		// itself, never ext:: or fd::.
		if v.Key == "url" || v.Key == "pushurl" {
			l := strings.ToLower(strings.TrimSpace(v.Value))
			if strings.HasPrefix(l, "ext::") || strings.HasPrefix(l, "fd::") || strings.HasPrefix(l, "-") {
				return false
			}
		}
	}
	return safeSubKeys[v.Section+"."+v.Key]
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// Sanitize returns a config keeping only the safe variables of data, and
// the names of those it left out. changed is false when data may stay as
// it is: it is plain and every variable is safe.
func Sanitize(data []byte, inTree func(string) bool) (out []byte, dropped []string, changed bool) {
	pc := ParseConfig(data)
	var keep []ConfigVar
	for _, v := range pc.Vars {
		if Safe(v, inTree) {
			keep = append(keep, v)
		} else {
			dropped = append(dropped, v.Name())
		}
	}
	if pc.Plain && len(dropped) == 0 {
		return data, nil, false
	}
	return WriteConfig(keep), dropped, true
}

// WriteConfig writes vars as a git config file, in order, grouping
// consecutive variables of one section. Every value is quoted and escaped
// and names that git would not read are left out, so what git reads back
// is exactly vars.
func WriteConfig(vars []ConfigVar) []byte {
	var b strings.Builder
	cur := "\x00"
	for _, v := range vars {
		if !validName(v.Section, true) || !validName(v.Key, false) || strings.ContainsAny(v.Sub, "\n\x00") {
			continue
		}
		head := v.Section + "\x00" + v.Sub
		if head != cur {
			cur = head
			if v.Sub == "" {
				b.WriteString("[" + v.Section + "]\n")
			} else {
				b.WriteString("[" + v.Section + " \"" + escapeSub(v.Sub) + "\"]\n")
			}
		}
		b.WriteString("\t" + v.Key)
		if v.Bool {
			b.WriteString("\n")
			continue
		}
		b.WriteString(" = \"" + escapeValue(v.Value) + "\"\n")
	}
	return []byte(b.String())
}

func validName(s string, section bool) bool {
	if s == "" || !isAlpha(s[0]) && !section {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && !(section && c == '.') {
			return false
		}
	}
	return true
}

func escapeSub(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

func escapeValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`).Replace(s)
}

// Includes returns the files a config includes (include.path and every
// includeIf.*.path, whatever the condition: any of them may apply).
func Includes(vars []ConfigVar) []string {
	var out []string
	for _, v := range vars {
		if v.Key == "path" && !v.Bool && (v.Section == "include" && v.Sub == "" || v.Section == "includeif") {
			out = append(out, v.Value)
		}
	}
	return out
}

// Values returns the values of the variable section.key (no subsection).
func Values(vars []ConfigVar, section, key string) []string {
	var out []string
	for _, v := range vars {
		if v.Section == section && v.Sub == "" && v.Key == key && !v.Bool {
			out = append(out, v.Value)
		}
	}
	return out
}
