package faults

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The environment that puts the proxies on an external toxiproxy server.
// The defaults are docker-compose.yml's.
const (
	envToxiproxyURL      = "OUTBOXLAB_TOXIPROXY_URL"      // its API, e.g. http://127.0.0.1:8474; unset: in-process proxies
	envToxiproxyPorts    = "OUTBOXLAB_TOXIPROXY_PORTS"    // the ports its proxies may listen on
	envToxiproxyUpstream = "OUTBOXLAB_TOXIPROXY_UPSTREAM" // the database, as the toxiproxy server reaches it
	envToxiproxyHost     = "OUTBOXLAB_TOXIPROXY_HOST"     // the toxiproxy server, as the workers reach it

	defaultToxiproxyPorts    = "55440-55447"
	defaultToxiproxyUpstream = "postgres:5432"
	defaultToxiproxyHost     = "127.0.0.1"
)

// externalConfig says where the external toxiproxy server is and how its
// proxies stand between the workers and the database.
type externalConfig struct {
	url         string // the API, with its scheme and no trailing slash
	first, last int    // each proxy listens on 0.0.0.0:<a free port of first..last>
	upstream    string // host:port every proxy forwards to
	host        string // where the workers find the proxies' ports
}

// externalFromEnv reads the configuration through getenv; ok is false when
// OUTBOXLAB_TOXIPROXY_URL is unset, and the proxies run in this process.
func externalFromEnv(getenv func(string) string) (cfg externalConfig, ok bool, err error) {
	u := strings.TrimRight(strings.TrimSpace(getenv(envToxiproxyURL)), "/")
	if u == "" {
		return externalConfig{}, false, nil
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		u = "http://" + u
	}
	cfg = externalConfig{
		url:      u,
		upstream: orDefault(getenv(envToxiproxyUpstream), defaultToxiproxyUpstream),
		host:     orDefault(getenv(envToxiproxyHost), defaultToxiproxyHost),
	}
	ports := orDefault(getenv(envToxiproxyPorts), defaultToxiproxyPorts)
	if cfg.first, cfg.last, err = portRange(ports); err != nil {
		return externalConfig{}, false, fmt.Errorf("%s=%q: %w", envToxiproxyPorts, ports, err)
	}
	if _, _, err := net.SplitHostPort(cfg.upstream); err != nil {
		return externalConfig{}, false, fmt.Errorf("%s=%q: want host:port, e.g. %s", envToxiproxyUpstream, cfg.upstream, defaultToxiproxyUpstream)
	}
	return cfg, true, nil
}

// ports prints the range as OUTBOXLAB_TOXIPROXY_PORTS takes it.
func (c externalConfig) ports() string { return fmt.Sprintf("%d-%d", c.first, c.last) }

// portRange parses FIRST-LAST, or a single port.
func portRange(s string) (first, last int, err error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, fmt.Errorf("want FIRST-LAST, e.g. %s", defaultToxiproxyPorts)
	}
	return first, last, nil
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}
