package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Codex's usage-limit errors (openai/codex#3124, #3899, #43892): the API's
// usage_limit_reached body with resets_at / resets_in_seconds, or Codex's
// own sentence, whose reset is a clock time of the machine it runs on,
// with a date when it is not today.
var (
	codexLimitRE   = regexp.MustCompile(`(?i)you[’']ve hit your usage limit|usage_limit_reached|usage limit has been reached`)
	codexAtRE      = regexp.MustCompile(`(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}),? )?(\d{1,2}):(\d{2})\s*([AP]M)\b`)
	codexInRE      = regexp.MustCompile(`(?i)try again in ((?:\d+ (?:days?|hours?|minutes?|seconds?),?\s*(?:and\s+)?)+)`)
	codexInPartRE  = regexp.MustCompile(`(\d+) (day|hour|minute|second)`)
	resetsAtRE     = regexp.MustCompile(`"resets_at"\s*:\s*(\d+)`)
	resetsInRE     = regexp.MustCompile(`"resets_in_seconds"\s*:\s*(\d+)`)
	maxCodexWaitIn = 31 * 24 * time.Hour
)

// codexLimit marks res as a usage limit when msg is one of Codex's, with
// its reset: resets_at, else resets_in_seconds, else "try again at …" in
// loc (the zone Codex printed it in), else "try again in …".
func codexLimit(res *Result, msg string, now time.Time, loc *time.Location) {
	reset := codexReset(msg, now, loc)
	if reset.IsZero() && !codexLimitRE.MatchString(msg) {
		return
	}
	res.Transient, res.UsageLimit = true, true
	setReset(res, reset, now)
}

func codexReset(msg string, now time.Time, loc *time.Location) time.Time {
	if m := resetsAtRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return unixReset(float64(n))
		}
	}
	if m := resetsInRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && time.Duration(n)*time.Second <= maxCodexWaitIn {
			return now.Add(time.Duration(n) * time.Second)
		}
	}
	if m := codexAtRE.FindStringSubmatch(msg); m != nil {
		hour, _ := strconv.Atoi(m[4])
		minute, _ := strconv.Atoi(m[5])
		if hour < 1 || hour > 12 || minute > 59 {
			return time.Time{}
		}
		hour %= 12
		if strings.EqualFold(m[6], "PM") {
			hour += 12
		}
		local := now.In(loc)
		if m[1] == "" {
			return nextClock(local, hour, minute)
		}
		mon, err := time.Parse("Jan", m[1])
		day, _ := strconv.Atoi(m[2])
		year, _ := strconv.Atoi(m[3])
		if err != nil || day < 1 || day > 31 {
			return time.Time{}
		}
		return time.Date(year, mon.Month(), day, hour, minute, 0, 0, loc)
	}
	if m := codexInRE.FindStringSubmatch(msg); m != nil {
		var d time.Duration
		for _, p := range codexInPartRE.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			unit := map[string]time.Duration{"day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute, "second": time.Second}[p[2]]
			d += time.Duration(n) * unit
		}
		if d > 0 && d <= maxCodexWaitIn {
			return now.Add(d)
		}
	}
	return time.Time{}
}
