package faults

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/rs/zerolog"
)

func TestExternalFromEnv(t *testing.T) {
	compose := externalConfig{url: "http://127.0.0.1:8474", first: 55440, last: 55447, upstream: "postgres:5432", host: "127.0.0.1"}
	for _, c := range []struct {
		name string
		env  map[string]string
		want externalConfig
		ok   bool
		err  string // a part of the error
	}{
		{name: "unset: in-process", env: map[string]string{}},
		{name: "compose defaults", env: map[string]string{envToxiproxyURL: "http://127.0.0.1:8474/"}, want: compose, ok: true},
		{name: "no scheme", env: map[string]string{envToxiproxyURL: "127.0.0.1:8474"}, want: compose, ok: true},
		{name: "all given", env: map[string]string{
			envToxiproxyURL: "http://toxiproxy:8474", envToxiproxyPorts: "40000-40001",
			envToxiproxyUpstream: "db:5433", envToxiproxyHost: "toxiproxy",
		}, want: externalConfig{url: "http://toxiproxy:8474", first: 40000, last: 40001, upstream: "db:5433", host: "toxiproxy"}, ok: true},
		{name: "one port", env: map[string]string{envToxiproxyURL: "http://x:8474", envToxiproxyPorts: "40000"},
			want: externalConfig{url: "http://x:8474", first: 40000, last: 40000, upstream: "postgres:5432", host: "127.0.0.1"}, ok: true},
		{name: "reversed ports", env: map[string]string{envToxiproxyURL: "x:1", envToxiproxyPorts: "55447-55440"}, err: envToxiproxyPorts + `="55447-55440": want FIRST-LAST`},
		{name: "not ports", env: map[string]string{envToxiproxyURL: "x:1", envToxiproxyPorts: "many"}, err: envToxiproxyPorts},
		{name: "port too high", env: map[string]string{envToxiproxyURL: "x:1", envToxiproxyPorts: "65535-65536"}, err: envToxiproxyPorts},
		{name: "upstream without port", env: map[string]string{envToxiproxyURL: "x:1", envToxiproxyUpstream: "postgres"}, err: envToxiproxyUpstream + `="postgres": want host:port`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := externalFromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || ok != c.ok || got != c.want {
				t.Errorf("got %+v, %v, %v; want %+v, %v", got, ok, err, c.want, c.ok)
			}
		})
	}
}

// TestExternalUnreachable: a URL nobody answers fails at once, naming the
// variable to fix, rather than on the first fault.
func TestExternalUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	t.Setenv(envToxiproxyURL, url)
	_, err = newProxySet("postgres://u@127.0.0.1:5432/x")
	if err == nil {
		t.Fatal("no error for an API that is not there")
	}
	for _, want := range []string{url, "unreachable", envToxiproxyURL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestExternalSweepsAbandonedProxies: a new run deletes the proxies a
// killed run on this machine left behind, and nothing else.
func TestExternalSweepsAbandonedProxies(t *testing.T) {
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	defer api.Collection.Clear()
	hs := httptest.NewServer(api.Routes())
	defer hs.Close()
	client := toxiclient.NewClient(hs.URL)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	here := machineTag()
	names := map[string]bool{ // name: swept
		fmt.Sprintf("outboxlab_%s_%d_0badc0de_w1", here, gone.Process.Pid):       true,
		fmt.Sprintf("outboxlab_%s_%d_0badc0de_w1", here, os.Getpid()):            false, // a live run
		fmt.Sprintf("outboxlab_%s_%d_0badc0de_w1", "0ther0ne", gone.Process.Pid): false, // another machine's
		fmt.Sprintf("outboxlab_%s_%d_0badc0de_my_w1", here, gone.Process.Pid):    true,  // a worker name with _
		"someone_elses": false,
	}
	for name := range names {
		if _, err := client.CreateProxy(name, "127.0.0.1:0", "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := newExternalProxies(externalConfig{url: hs.URL, first: 1, last: 1, upstream: "127.0.0.1:1", host: "127.0.0.1"}, ""); err != nil {
		t.Fatal(err)
	}
	left, err := client.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	for name, swept := range names {
		if _, kept := left[name]; kept == swept {
			t.Errorf("%s: kept %v, want %v", name, kept, !swept)
		}
	}
	// What runPrefix makes is what the sweep reads.
	mine := runPrefix() + "w1"
	dead := strings.Replace(mine, fmt.Sprintf("_%d_", os.Getpid()), fmt.Sprintf("_%d_", gone.Process.Pid), 1)
	if abandoned(mine, here) || !abandoned(dead, here) {
		t.Errorf("runPrefix() makes %q: abandoned %v, and %v with a dead pid; want false, true", mine, abandoned(mine, here), abandoned(dead, here))
	}
}
