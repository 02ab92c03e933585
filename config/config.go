package config

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
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

// CheckFlags reports a mismatch between cfg's TOML keys and fs's flags:
// every key must have a flag of the same name with a description (so
// --help documents the whole configuration), and every flag but --config
// must be a key. The keys of an embedded struct without a tag (a section
// shared by several binaries, such as security.Config) are cfg's own, as
// for the TOML decoder. The mains' tests call it.
func CheckFlags(fs *flag.FlagSet, cfg any) error {
	rt := reflect.TypeOf(cfg)
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	keys := map[string]bool{}
	if err := checkKeys(fs, rt, keys); err != nil {
		return err
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" && !keys[f.Name] && err == nil {
			err = fmt.Errorf("config: flag --%s is not a configuration key", f.Name)
		}
	})
	return err
}

// checkKeys records the TOML keys of struct type rt in keys and checks
// each has a described flag.
func checkKeys(fs *flag.FlagSet, rt reflect.Type, keys map[string]bool) error {
	for i := range rt.NumField() {
		field := rt.Field(i)
		key := field.Tag.Get("toml")
		if field.Anonymous && key == "" && field.Type.Kind() == reflect.Struct {
			if err := checkKeys(fs, field.Type, keys); err != nil {
				return err
			}
			continue
		}
		keys[key] = true
		f := fs.Lookup(key)
		if f == nil {
			return fmt.Errorf("config: key %q has no flag", key)
		}
		if f.Usage == "" {
			return fmt.Errorf("config: flag --%s has no description", key)
		}
	}
	return nil
}
