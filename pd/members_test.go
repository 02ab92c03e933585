package pd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
)

// apiCall sends one HTTP API request to addr ("host:port" or a URL), with
// an Authorization header when auth is given, and returns the status and
// body.
func apiCall(t *testing.T, addr, method, path, body string, auth ...string) (int, string) {
	t.Helper()
	if !strings.HasPrefix(addr, "http://") {
		addr = "http://" + addr
	}
	req, err := http.NewRequest(method, addr+"/pd/api/v1/"+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	if len(auth) > 0 && auth[0] != "" {
		req.Header.Set("Authorization", auth[0])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

type membersView struct {
	Members []struct {
		Name string `json:"name"`
	} `json:"members"`
	Leader struct {
		Name string `json:"name"`
	} `json:"leader"`
}

func memberNames(t *testing.T, addr string) []string {
	t.Helper()
	code, body := apiCall(t, addr, "GET", "members", "")
	require.Equal(t, 200, code, body)
	var v membersView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	var names []string
	for _, m := range v.Members {
		names = append(names, m.Name)
	}
	return names
}

// A follower forwards leader-only API requests to the leader (reads and
// writes); a third member is added through the API, joins and serves, and
// is removed again, after which it stops and the cluster keeps serving TSO.
func TestMembersAddRemoveAndForwarding(t *testing.T) {
	ss := pdtest.NewCluster(t, 2, 3)
	leader := pdtest.Leader(ss)
	follower := ss[0]
	if follower == leader {
		follower = ss[1]
	}
	// Forwarded: a read, a write, and the write's effect read on the leader.
	code, body := apiCall(t, follower.HTTPAddr, "GET", "config", "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"max-store-down-time"`)
	code, body = apiCall(t, follower.HTTPAddr, "POST", "config", `{"store-limit":33}`)
	require.Equal(t, 200, code, body)
	_, body = apiCall(t, leader.HTTPAddr, "GET", "config", "")
	require.Contains(t, body, `"store-limit": 33`)
	code, body = apiCall(t, follower.HTTPAddr, "GET", "store/9", "")
	require.Equal(t, 404, code, "the leader's answer, status and all: %s", body)

	// Bad member requests.
	for _, tc := range []struct{ body, want string }{
		{`nope`, "bad member request"},
		{`{"name":"pd3"}`, "at least one peer URL"},
		{`{"name":"a=b","peer_urls":["http://127.0.0.1:1"]}`, "no '='"},
		{`{"name":"pd3","peer_urls":["127.0.0.1:1"]}`, "is not http(s)://host:port"},
		{`{"name":"pd1","peer_urls":["http://127.0.0.1:1"]}`, "already exists"},
	} {
		code, body := apiCall(t, follower.HTTPAddr, "POST", "members", tc.body)
		require.NotEqual(t, 200, code, tc.body)
		require.Contains(t, body, tc.want, tc.body)
	}
	code, body = apiCall(t, leader.HTTPAddr, "DELETE", "members/name/nope", "")
	require.Equal(t, 404, code, body)

	// Add pd3 through the follower, start it with the answer.
	peer := pdtest.FreePeerURL(t)
	// etcd refuses to add a voter until every member has been connected
	// for 5 s ("unhealthy cluster").
	require.Eventually(t, func() bool {
		code, body = apiCall(t, follower.HTTPAddr, "POST", "members", `{"name":"pd3","peer_urls":["`+peer+`"]}`)
		require.Contains(t, []int{200, 503}, code, body)
		return code == 200
	}, 30*time.Second, 200*time.Millisecond, "member add: %d %s", code, body)
	var added struct {
		InitialCluster      string `json:"initial_cluster"`
		InitialClusterState string `json:"initial_cluster_state"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &added))
	require.Equal(t, "existing", added.InitialClusterState)
	require.Contains(t, added.InitialCluster, "pd3="+peer)
	start := time.Now()
	pd3 := pdtest.Join(t, "pd3", peer, added.InitialCluster, 3)
	t.Logf("pd3 joined and serves %v after it was added", time.Since(start).Round(time.Millisecond))
	require.ElementsMatch(t, []string{"pd1", "pd2", "pd3"}, memberNames(t, leader.HTTPAddr))
	// The new member forwards too.
	code, body = apiCall(t, pd3.HTTPAddr, "GET", "config", "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"store-limit": 33`)

	// Remove it (by name, through the leader): it stops by itself.
	require.Eventually(t, func() bool {
		code, body = apiCall(t, leader.HTTPAddr, "DELETE", "members/name/pd3", "")
		return code == 200
	}, 30*time.Second, 200*time.Millisecond, "member remove: %d %s", code, body)
	pd3.WaitRemoved()
	require.ElementsMatch(t, []string{"pd1", "pd2"}, memberNames(t, leader.HTTPAddr))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := pdclient.New(ctx, []string{ss[0].Addr, ss[1].Addr})
	require.NoError(t, err)
	defer cli.Close()
	_, err = cli.GetTS(ctx)
	require.NoError(t, err)
}
