// Command consistencycheck runs the replica consistency check of a Strata
// cluster: every region's replicas hash the region at the same raft index
// and must agree (raftstore/replicacheck). It finds the stores through PD's
// HTTP API or takes their status addresses:
//
//	consistencycheck --pd 127.0.0.1:2382
//	consistencycheck --stores 127.0.0.1:20180,127.0.0.1:20181,127.0.0.1:20182
//
// Exit status: 0 every region checked on every replica and equal; 1 a
// replica differs (printed: replace it); 2 the check could not finish.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/raftstore/replicacheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("consistencycheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pd := fs.String("pd", "", "PD status address (host:port); its API lists the stores")
	stores := fs.String("stores", "", "comma-separated store status addresses (instead of --pd)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	var secCfg security.Config // PD's API is HTTPS with cluster TLS
	secCfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Minute}
	addrs := config.SplitList(*stores)
	if *pd != "" {
		sec, err := security.New(secCfg, "consistencycheck")
		if err != nil {
			fmt.Fprintln(stderr, "consistencycheck:", err)
			return 2
		}
		if addrs, err = storesFromPD(ctx, sec, *pd); err != nil {
			fmt.Fprintln(stderr, "consistencycheck:", err)
			return 2
		}
	}
	if len(addrs) == 0 {
		fmt.Fprintln(stderr, "consistencycheck: give --pd or --stores")
		return 2
	}
	res, err := replicacheck.Run(ctx, client, addrs)
	for _, m := range res.Mismatches {
		fmt.Fprintf(stdout, "MISMATCH region %d at index %d: replica on %s hashed %s, leader %s (replica's verdict %q)\n",
			m.RegionID, m.Index, m.StatusAddr, m.Hash, m.LeaderHash, m.ReplicaView)
	}
	fmt.Fprintf(stdout, "%d regions equal on every replica, %d differ, %d unfinished %v\n",
		len(res.Checked), len(res.Mismatches), len(res.Unfinished), res.Unfinished)
	switch {
	case len(res.Mismatches) > 0:
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "consistencycheck:", err)
		return 2
	case len(res.Unfinished) > 0:
		fmt.Fprintln(stderr, "consistencycheck: some regions were not checked on every replica (leaders moving, stores down?); run again")
		return 2
	}
	return 0
}

// storesFromPD lists the status addresses of the stores PD knows (not
// tombstones).
func storesFromPD(ctx context.Context, sec *security.TLS, pd string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sec.Scheme()+"://"+pd+"/pd/api/v1/stores", nil)
	if err != nil {
		return nil, err
	}
	resp, err := sec.HTTPClient(time.Minute).Do(req)
	if err != nil {
		return nil, fmt.Errorf("list stores from PD %s: %w", pd, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list stores from PD %s: %s", pd, resp.Status)
	}
	var body struct {
		Stores []struct {
			Store struct {
				StatusAddress string `json:"status_address"`
				StateName     string `json:"state_name"`
			} `json:"store"`
		} `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("list stores from PD %s: %w", pd, err)
	}
	var out []string
	for _, s := range body.Stores {
		if s.Store.StatusAddress != "" {
			out = append(out, s.Store.StatusAddress)
		}
	}
	return out, nil
}
