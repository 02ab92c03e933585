package config

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Parse parses args into fs, whose flags must be bound to fields of cfg (a
// pointer to a struct with `toml` tags). When --config names a file, the file
// is decoded into cfg first and the flags set on the command line are
// applied again on top, so flags win. Parse defines --config on fs when fs
// does not have it yet.
func Parse(fs *flag.FlagSet, args []string, cfg any) error {
	if fs.Lookup("config") == nil {
		fs.String("config", "", "TOML configuration file (flags override it)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("config: unexpected argument %q", fs.Arg(0))
	}
	path := fs.Lookup("config").Value.String()
	if path == "" {
		return nil
	}
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() })

	md, err := toml.DecodeFile(path, cfg)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("config: %s: %s", path, perr.ErrorWithPosition())
		}
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return fmt.Errorf("config: %s: unknown key %s (see --help for the valid keys)", path, strings.Join(keys, ", "))
	}
	for name, v := range set {
		if err := fs.Lookup(name).Value.Set(v); err != nil {
			return fmt.Errorf("config: flag --%s: %w", name, err)
		}
	}
	return nil
}
