package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// netlab is a private network of the test's own: one network namespace
// per cluster process, each with an address 10.77.<id>.<10+i> on a bridge
// that lives in a hub namespace of its own (so no firewall of the host's,
// Docker's FORWARD policy included, sees the traffic), and a veth from the
// test's namespace to the hub (10.78.<id>.1 <-> .2) with a route, so the
// clients in the test process reach every member. Faults are nftables
// rules inside the members' namespaces (table inet chaos) and tc qdiscs on
// their interfaces; heal removes them. Everything is removed when the test
// ends. It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2, nft, tc.
type netlab struct {
	t     *testing.T
	id    int
	hub   string
	nodes []string // namespace of member i
	ips   []string // address of member i
}

// newNetlab creates a lab for n members, picking a free id (the hub's name
// is the lock: `ip netns add` fails if another test holds it).
func newNetlab(t *testing.T, n int) *netlab {
	t.Helper()
	l := &netlab{t: t}
	for id := 20 + os.Getpid()%100; ; id++ {
		require.Less(t, id, 250, "no free netlab id")
		hub := fmt.Sprintf("sx%dhub", id)
		if exec.Command("ip", "netns", "add", hub).Run() == nil {
			l.id, l.hub = id, hub
			break
		}
	}
	t.Cleanup(l.remove)
	up := fmt.Sprintf("sx%dup", l.id)
	l.sh(l.hub, "ip", "link", "add", "br0", "type", "bridge")
	l.sh(l.hub, "ip", "link", "set", "br0", "up")
	l.sh(l.hub, "ip", "addr", "add", fmt.Sprintf("10.77.%d.1/24", l.id), "dev", "br0")
	l.sh(l.hub, "ip", "link", "set", "lo", "up")
	l.sh("", "ip", "link", "add", up, "type", "veth", "peer", "name", "up0", "netns", l.hub)
	l.sh("", "ip", "addr", "add", fmt.Sprintf("10.78.%d.1/30", l.id), "dev", up)
	l.sh("", "ip", "link", "set", up, "up")
	l.sh(l.hub, "ip", "addr", "add", fmt.Sprintf("10.78.%d.2/30", l.id), "dev", "up0")
	l.sh(l.hub, "ip", "link", "set", "up0", "up")
	l.sh(l.hub, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	l.sh("", "ip", "route", "add", fmt.Sprintf("10.77.%d.0/24", l.id), "via", fmt.Sprintf("10.78.%d.2", l.id))
	for i := range n {
		ns, veth := fmt.Sprintf("sx%dn%d", l.id, i), fmt.Sprintf("sx%dv%d", l.id, i)
		ip := fmt.Sprintf("10.77.%d.%d", l.id, 10+i)
		l.sh("", "ip", "netns", "add", ns)
		l.nodes, l.ips = append(l.nodes, ns), append(l.ips, ip)
		l.sh("", "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		l.sh("", "ip", "link", "set", veth, "netns", l.hub)
		l.sh(l.hub, "ip", "link", "set", veth, "master", "br0")
		l.sh(l.hub, "ip", "link", "set", veth, "up")
		l.sh(ns, "ip", "link", "set", "lo", "up")
		l.sh(ns, "ip", "link", "set", "eth0", "up")
		l.sh(ns, "ip", "addr", "add", ip+"/24", "dev", "eth0")
		l.sh(ns, "ip", "route", "add", "default", "via", fmt.Sprintf("10.77.%d.1", l.id))
	}
	return l
}

// sh runs a command in namespace ns ("" = the test's own) and fails the
// test if it fails.
func (l *netlab) sh(ns string, args ...string) {
	l.t.Helper()
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(l.t, err, "%s: %s", strings.Join(args, " "), out)
}

// remove deletes the namespaces (their veths and the route go with them).
func (l *netlab) remove() {
	for _, ns := range append(l.nodes, l.hub) {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

// wrap is the command prefix that runs member i in its namespace.
func (l *netlab) wrap(i int) []string { return []string{"ip", "netns", "exec", l.nodes[i]} }

// drop makes member i drop every packet from (and to, unless oneWay) the
// members in peers.
func (l *netlab) drop(i int, peers []int, oneWay bool) {
	l.t.Helper()
	if len(peers) == 0 {
		return
	}
	var set []string
	for _, p := range peers {
		set = append(set, l.ips[p])
	}
	addrs := "{ " + strings.Join(set, ", ") + " }"
	l.ensureTable(i)
	l.sh(l.nodes[i], "nft", "add", "rule", "inet", "chaos", "in", "ip", "saddr", addrs, "drop")
	if !oneWay {
		l.sh(l.nodes[i], "nft", "add", "rule", "inet", "chaos", "out", "ip", "daddr", addrs, "drop")
	}
}

// lose makes member i drop pct % of its packets, both ways, at random.
func (l *netlab) lose(i, pct int) {
	l.t.Helper()
	l.ensureTable(i)
	for _, chain := range []string{"in", "out"} {
		l.sh(l.nodes[i], "nft", "add", "rule", "inet", "chaos", chain, "ip", "daddr", fmt.Sprintf("10.77.%d.0/24", l.id),
			"numgen", "random", "mod", "100", "<", fmt.Sprint(pct), "drop")
	}
}

// slow caps member i's outgoing bandwidth (tc tbf on its interface).
func (l *netlab) slow(i int, rate string) {
	l.t.Helper()
	l.sh(l.nodes[i], "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "32kbit", "latency", "400ms")
}

func (l *netlab) ensureTable(i int) {
	l.t.Helper()
	if exec.Command("ip", "netns", "exec", l.nodes[i], "nft", "list", "table", "inet", "chaos").Run() == nil {
		return
	}
	l.sh(l.nodes[i], "nft", "add", "table", "inet", "chaos")
	l.sh(l.nodes[i], "nft", "add chain inet chaos in { type filter hook input priority 0; }")
	l.sh(l.nodes[i], "nft", "add chain inet chaos out { type filter hook output priority 0; }")
}

// heal removes every rule and qdisc the lab added.
func (l *netlab) heal() {
	for _, ns := range l.nodes {
		_ = exec.Command("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "chaos").Run()
		_ = exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root").Run()
	}
}
