package netproxy

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// OptionsFor returns the options a plan's network gives every backend's
// proxy: the upstream proxy and its credentials, the secrets, and, when
// the proxy terminates TLS for some hosts, the run's own certificate
// authority, made here. The backend adds its log, its forwards and where
// decisions go.
func OptionsFor(n plan.Network) (Options, error) {
	var o Options
	if u := n.Upstream; u != nil {
		o.Upstream = &Upstream{Addr: strings.TrimPrefix(u.URL, "http://"), Credentials: u.Credentials, NoProxy: u.NoProxy}
	}
	for _, s := range n.Secrets {
		if s.Value == "" {
			// A plan decoded from JSON has no values: the run must be
			// the one that resolved it.
			return Options{}, fmt.Errorf("secret %s: the plan holds no value (it was not resolved by this run)", s.Env)
		}
		o.Secrets = append(o.Secrets, Secret{Name: s.Env, Value: s.Value, Placeholder: s.Placeholder, Hosts: s.Hosts})
	}
	if len(n.Intercept) > 0 {
		ca, err := NewAuthority(n.Intercept)
		if err != nil {
			return Options{}, err
		}
		o.Authority = ca
	}
	return o, nil
}

// Bundle is the box's certificate bundle: the files of base (the trust the
// box had), then the run's authority.
func Bundle(base []string, ca *Authority) ([]byte, error) {
	var b bytes.Buffer
	for _, f := range base {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading the certificate bundle %s: %w", f, err)
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	b.WriteString("# agentbox: this run's own certificate authority, for the hosts its proxy reads\n")
	b.Write(ca.CertPEM())
	return b.Bytes(), nil
}
