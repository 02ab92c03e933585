package pdtest

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// leasePath is where an etcd follower forwards lease renewals to the etcd
// leader (go.etcd.io/etcd/server/v3/lease/leasehttp.LeasePrefix).
const leasePath = "/leases"

// RenewAction is what a PeerProxy does with one forwarded lease renewal.
type RenewAction struct {
	// Drop: the renewal is not forwarded (the lease is not renewed) and
	// the request is held until its sender gives up.
	Drop bool
	// Hold, if not nil: the renewal is forwarded (the member renews the
	// lease now) but the answer is returned only once Hold is closed.
	Hold <-chan struct{}
}

// RenewHook decides the fate of a renewal of lease id; it runs on the
// proxy's request goroutine and must not block.
type RenewHook func(id int64) RenewAction

// PeerProxy is an HTTP reverse proxy in front of one member's etcd peer
// URL: the member advertises the proxy's URL, so every peer request to it
// (raft streams, pipelines, snapshots, forwarded lease renewals) passes
// through the test process, where a RenewHook can delay or drop forwarded
// lease renewals (etcd followers forward renewals to the etcd leader).
type PeerProxy struct {
	srv  *http.Server
	rp   *httputil.ReverseProxy
	hook atomic.Pointer[RenewHook]
	// URL is the advertised peer URL ("http://127.0.0.1:port").
	URL string
}

// newPeerProxy listens on a free loopback port and forwards to target.
func newPeerProxy(t testing.TB, target string) *PeerProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &PeerProxy{URL: "http://" + l.Addr().String()}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.FlushInterval = -1                    // raft streams
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // refused dials while members start and stop
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

// SetRenewHook installs h (nil removes it).
func (p *PeerProxy) SetRenewHook(h RenewHook) {
	if h == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&h)
}

func (p *PeerProxy) serve(w http.ResponseWriter, r *http.Request) {
	h := p.hook.Load()
	if h == nil || r.URL.Path != leasePath || r.Method != http.MethodPost {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req pb.LeaseKeepAliveRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	act := (*h)(req.ID)
	if act.Drop {
		<-r.Context().Done()
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	p.rp.ServeHTTP(rec, r)
	if act.Hold != nil {
		select {
		case <-act.Hold:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.code)
	_, _ = w.Write(rec.body.Bytes())
}

// recorder buffers one (small) proxied answer.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
