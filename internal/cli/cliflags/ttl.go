package cliflags

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/plantstore/plantstore"
)

// TTLGrammar states the grammar of a token lifetime on the command line;
// the --ttl flags' help and ParseTTL's errors say it in these words.
const TTLGrammar = "a whole number of seconds, or with one unit s, m, h or d: 3600, 3600s, 90m, 720h, 30d"

// ttlRE is TTLGrammar: digits, then at most one unit.
var ttlRE = regexp.MustCompile(`^([0-9]+)([smhd]?)$`)

// ttlUnits are the units of TTLGrammar; no unit is seconds.
var ttlUnits = map[string]time.Duration{"": time.Second, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}

// ParseTTL reads a token lifetime written as TTLGrammar says: 3600, 3600s,
// 90m, 720h or 30d. Anything else (a repeated or mixed unit such as 30d30d
// or 1h30m, a sign, a fraction, spaces) and more than plantstore.MaxTokenTTL
// (100 years) are refused with an error stating the grammar or the bound.
// Zero (0, 0s, 0d) is 0: no expiry, as an absent flag, which the CLI has
// always accepted.
func ParseTTL(s string) (time.Duration, error) {
	m := ttlRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a lifetime: write %s", s, TTLGrammar)
	}
	unit := ttlUnits[m[2]]
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > int64(plantstore.MaxTokenTTL/unit) {
		return 0, fmt.Errorf("%q: a lifetime is at most 100 years (36525d)", s)
	}
	return time.Duration(n) * unit, nil
}

// TTL is a --ttl flag: a token lifetime parsed by ParseTTL; 0 when the
// flag is absent or zero (the token never expires).
type TTL time.Duration

// UnmarshalText parses the flag's value with ParseTTL.
func (t *TTL) UnmarshalText(b []byte) error {
	d, err := ParseTTL(string(b))
	if err != nil {
		return err
	}
	*t = TTL(d)
	return nil
}
