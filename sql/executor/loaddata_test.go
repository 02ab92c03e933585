package executor

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadReader(t *testing.T) {
	def := loadFormat{fieldTerm: []byte("\t"), lineTerm: []byte("\n"), escaped: '\\'}
	csv := loadFormat{fieldTerm: []byte(","), lineTerm: []byte("\r\n"), enclosed: '"', escaped: '\\'}
	for _, c := range []struct {
		name string
		f    loadFormat
		in   string
		want [][]string // NULL as "<null>"
	}{
		{"tabs", def, "1\ta\n2\tb\n", [][]string{{"1", "a"}, {"2", "b"}}},
		{"no final newline", def, "1\ta\n2\tb", [][]string{{"1", "a"}, {"2", "b"}}},
		{"null and escapes", def, "\\N\tx\\ty\\\\z\\n\n", [][]string{{"<null>", "x\ty\\z\n"}}},
		{"empty field", def, "1\t\n", [][]string{{"1", ""}}},
		{"csv quoted", csv, "1,\"a,b\"\r\n2,\"say \"\"hi\"\"\"\r\n", [][]string{{"1", "a,b"}, {"2", "say \"hi\""}}},
		{"csv NULL", csv, "NULL,\"NULL\",\\N,NULLS\r\n", [][]string{{"<null>", "NULL", "<null>", "NULLS"}}},
		{"NULL without enclosure is a string", def, "NULL\n", [][]string{{"NULL"}}},
		{"csv quoted line break", csv, "1,\"x\r\ny\"\r\n", [][]string{{"1", "x\r\ny"}}},
		{"starting by", loadFormat{fieldTerm: []byte(","), lineTerm: []byte("\n"), lineStart: []byte("> "), escaped: '\\'},
			"junk> 1,a\n> 2,b\n", [][]string{{"1", "a"}, {"2", "b"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lr := &loadReader{r: bufio.NewReader(strings.NewReader(c.in)), f: c.f}
			var got [][]string
			var fields []loadField
			for {
				var err error
				fields, err = lr.next(fields)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				var rec []string
				for _, f := range fields {
					if f.null {
						rec = append(rec, "<null>")
					} else {
						rec = append(rec, string(f.val))
					}
				}
				got = append(got, rec)
			}
			require.Equal(t, c.want, got)
		})
	}
}
