package netproxy

import (
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// Secret is a credential the box holds only as a placeholder. On a TLS
// connection to one of its hosts, which the proxy terminates (see
// intercept.go), the placeholder in a request's header fields becomes the
// value; a placeholder on its way anywhere else (another host, plain
// HTTP, a CONNECT request, a host name) is refused and logged as an
// exfiltration attempt; and in what comes back from the hosts the proxy
// reads, the value becomes the placeholder again, so an answer that
// repeats the request does not hand the box the value.
type Secret struct {
	// Name is the variable the box finds the placeholder in, for logs.
	Name        string
	Value       string
	Placeholder string
	// Hosts are host entries as in Compile: names, "*.domain", addresses,
	// with optional ports.
	Hosts []string

	hosts *Rules
}

// compileSecrets checks the secrets and compiles their hosts.
func compileSecrets(secrets []Secret) ([]Secret, error) {
	out := make([]Secret, len(secrets))
	for i, s := range secrets {
		if s.Value == "" || len(s.Placeholder) != len(s.Value) || s.Placeholder == s.Value {
			return nil, fmt.Errorf("secret %s: the placeholder must differ from the value and be as long", s.Name)
		}
		if strings.ToLower(s.Placeholder) != s.Placeholder {
			// A host name that carries it is compared in lower case.
			return nil, fmt.Errorf("secret %s: the placeholder must be lower case", s.Name)
		}
		rules, err := Compile(s.Hosts, nil)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", s.Name, err)
		}
		if len(s.Hosts) == 0 {
			return nil, fmt.Errorf("secret %s: no hosts", s.Name)
		}
		for _, r := range rules.allow {
			if r.request() {
				return nil, fmt.Errorf("secret %s: %q: a host, not a request rule", s.Name, r.text)
			}
		}
		s.hosts = rules
		out[i] = s
	}
	return out, nil
}

// goesTo reports whether the secret may be sent to h:port.
func (s *Secret) goesTo(h host, port int) bool {
	d, _ := s.hosts.checkHost(h, port)
	return d.Allowed
}

// ownSecrets are the secrets that may go to h:port.
func (p *Proxy) ownSecrets(h host, port int) []*Secret {
	var out []*Secret
	for i := range p.secrets {
		if p.secrets[i].goesTo(h, port) {
			out = append(out, &p.secrets[i])
		}
	}
	return out
}

// inspects reports whether the proxy reads the requests to h:port one by
// one: a request rule covers it, or a secret goes to it.
func (p *Proxy) inspects(h host, port int) bool {
	return p.rules.intercepts(h, port) || len(p.ownSecrets(h, port)) > 0
}

// errExfiltration marks a placeholder on its way where its secret may
// not go.
var errExfiltration = errors.New("exfiltration attempt")

// exfiltration is the denial of a placeholder on its way to target: in
// where ("header X-Api-Key", "the request's URL", "the body").
func exfiltration(s *Secret, where, target string) Decision {
	return Decision{Reason: fmt.Sprintf("%v: the placeholder of %s, which goes only to %s (over TLS), in %s to %s",
		errExfiltration, s.Name, strings.Join(s.Hosts, ", "), where, target)}
}

// placeholderIn returns the first secret whose placeholder is in s, for
// which may(secret) is false, or nil.
func (p *Proxy) placeholderIn(s string, may func(*Secret) bool) *Secret {
	if len(p.secrets) == 0 {
		return nil
	}
	lower := strings.ToLower(s)
	for i := range p.secrets {
		sec := &p.secrets[i]
		if strings.Contains(lower, sec.Placeholder) && (may == nil || !may(sec)) {
			return sec
		}
	}
	return nil
}

// headPlaceholder finds a placeholder that may not go where the request
// head goes: in its target or a header field. It returns the secret and
// where it was, or nil.
func (p *Proxy) headPlaceholder(target string, h textproto.MIMEHeader, may func(*Secret) bool) (*Secret, string) {
	if s := p.placeholderIn(target, may); s != nil {
		return s, "the request's URL"
	}
	for name, values := range h {
		// A field's name can carry one as well as its value.
		if s := p.placeholderIn(name, may); s != nil {
			return s, "a header field's name"
		}
		for _, v := range values {
			if s := p.placeholderIn(v, may); s != nil {
				return s, "header " + name
			}
		}
	}
	return nil, ""
}

// redact names the secret wherever its value or placeholder is in s, and
// hides the upstream's credentials in any form.
func (p *Proxy) redact(s string) string {
	for _, sec := range p.secrets {
		name := "{" + sec.Name + "}"
		s = strings.ReplaceAll(s, sec.Value, name)
		s = strings.ReplaceAll(s, sec.Placeholder, name)
	}
	return p.red.string(s)
}

// swapIn puts the values of own in place of their placeholders in the
// header fields; it returns the names of the secrets put in.
func swapIn(h textproto.MIMEHeader, own []*Secret) []string {
	var put []string
	for name, values := range h {
		for i, v := range values {
			for _, s := range own {
				if strings.Contains(v, s.Placeholder) {
					v = strings.ReplaceAll(v, s.Placeholder, s.Value)
					if !slices.Contains(put, s.Name) {
						put = append(put, s.Name)
					}
				}
			}
			h[name][i] = v
		}
	}
	return put
}
