package outboxlab

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/rs/zerolog"
)

// TestExternalToxiproxy runs the network faults through a toxiproxy server
// reached only through its HTTP API, as docker-compose.yml's is
// (OUTBOXLAB_TOXIPROXY_URL). Here that server runs in this process behind
// an httptest server and forwards to the local test cluster; its proxies
// listen on a free range of two ports.
func TestExternalToxiproxy(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgconn.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skip("the server is reached over a Unix socket; a proxy needs TCP")
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	defer api.Collection.Clear()
	calls := &callLog{next: api.Routes()}
	hs := httptest.NewServer(calls)
	defer hs.Close()
	port := freePortPair(t)
	t.Setenv("OUTBOXLAB_TOXIPROXY_URL", hs.URL)
	t.Setenv("OUTBOXLAB_TOXIPROXY_PORTS", fmt.Sprintf("%d-%d", port, port+1))
	t.Setenv("OUTBOXLAB_TOXIPROXY_UPSTREAM", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	client := toxiclient.NewClient(hs.URL)

	// The same checks as with the in-process proxies: a lost request never
	// runs, a lost reply's claim commits, and the client sees a connection
	// error for both.
	t.Run("TestNetworkFaults", TestNetworkFaults)
	for _, want := range []string{
		"POST /proxies",
		"POST /proxies/outboxlab_*_probe/toxics",
		"DELETE /proxies/outboxlab_*_probe/toxics/request_lost",
		"DELETE /proxies/outboxlab_*_probe/toxics/reply_lost",
		"DELETE /proxies/outboxlab_*_probe",
	} {
		if !calls.has(want) {
			t.Errorf("the API was never asked %s; it was asked:\n%s", want, calls)
		}
	}
	if left := proxyPorts(t, client); len(left) > 0 {
		t.Errorf("after Close the server still has proxies %v", left)
	}

	// Two runs share the server: the second takes the port the first left,
	// then finds none; Close deletes a run's own proxies only.
	first, err := faults.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := faults.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	wantPort(t, first.WorkerConnString("w1"), port)
	wantPort(t, second.WorkerConnString("w1"), port+1)
	if cs := second.WorkerConnString("w2"); cs != srv.ConnString() {
		t.Errorf("with the range exhausted w2 connects to %q, want the server directly", cs)
	}
	_, err = second.LoseRequest("w2")
	if err == nil || !strings.Contains(err.Error(), "no free port for w2's proxy: OUTBOXLAB_TOXIPROXY_PORTS=") {
		t.Errorf("a fault on w2 with the range exhausted: error %v, want no free port", err)
	} else {
		t.Logf("range exhausted: %v", err)
	}
	first.Close()
	if left := proxyPorts(t, client); len(left) != 1 || !strings.HasSuffix(left[port+1], "_w1") {
		t.Errorf("after the first run's Close the server has %v, want only the second run's w1 on %d", left, port+1)
	}
	second.Close()
	if left := proxyPorts(t, client); len(left) > 0 {
		t.Errorf("after both runs closed the server has %v", left)
	}

	// A wrong upstream is reported with the variables to fix, and its
	// proxy deleted, rather than showing as every connection failing.
	t.Setenv("OUTBOXLAB_TOXIPROXY_UPSTREAM", closedAddress(t))
	astray, err := faults.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer astray.Close()
	astray.WorkerConnString("w1")
	_, err = astray.LoseReply("w1")
	if err == nil || !strings.Contains(err.Error(), "does not reach the server") || !strings.Contains(err.Error(), "OUTBOXLAB_TOXIPROXY_UPSTREAM") {
		t.Errorf("a fault through a proxy to nowhere: error %v, want does not reach the server", err)
	}
	if left := proxyPorts(t, client); len(left) > 0 {
		t.Errorf("the proxy to nowhere was kept: %v", left)
	}
}

// closedAddress is a loopback host:port nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// callLog records each API request as "METHOD /path" before serving it.
type callLog struct {
	next  http.Handler
	mu    sync.Mutex
	calls []string
}

func (c *callLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.calls = append(c.calls, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

// has reports whether a call matched pattern (path.Match: * is any part
// of one path element).
func (c *callLog) has(pattern string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		if ok, _ := path.Match(pattern, call); ok {
			return true
		}
	}
	return false
}

func (c *callLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.calls, "\n")
}

// proxyPorts lists the server's proxies by the port they listen on.
func proxyPorts(t *testing.T, client *toxiclient.Client) map[int]string {
	t.Helper()
	all, err := client.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	byPort := map[int]string{}
	for _, p := range all {
		_, port, _ := net.SplitHostPort(p.Listen)
		n, _ := strconv.Atoi(port)
		byPort[n] = p.Name
	}
	return byPort
}

func wantPort(t *testing.T, connString string, port int) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "127.0.0.1" || int(cfg.Port) != port {
		t.Errorf("worker connects to %s:%d, want its proxy at 127.0.0.1:%d", cfg.Host, cfg.Port, port)
	}
}

// freePortPair finds two consecutive ports free on every interface, for
// proxies that listen on 0.0.0.0 as the compose ones do.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		a, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", p+1))
		a.Close()
		if err == nil {
			b.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports")
	return 0
}
