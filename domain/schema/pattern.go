package schema

import (
	"regexp"
	"sync"
)

// maxCachedPatterns bounds the compiled-pattern cache; patterns come from
// graph schemas, so a handful are live at once, and anything beyond the cap
// is simply compiled per call.
const maxCachedPatterns = 1024

var patternCache = struct {
	sync.Mutex
	compiled map[string]*regexp.Regexp
}{compiled: map[string]*regexp.Regexp{}}

// compilePattern compiles an RE2 pattern, reusing earlier compilations
// because Validate runs for every state write.
func compilePattern(pattern string) (*regexp.Regexp, error) {
	patternCache.Lock()
	re, ok := patternCache.compiled[pattern]
	patternCache.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	patternCache.Lock()
	if len(patternCache.compiled) < maxCachedPatterns {
		patternCache.compiled[pattern] = re
	}
	patternCache.Unlock()
	return re, nil
}
