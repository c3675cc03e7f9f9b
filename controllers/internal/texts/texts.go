/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package texts words what the operator writes for people (status messages, Events): a count
// agrees with its noun, a rate is rounded.
package texts

import (
	"fmt"
	"math"
	"strconv"
)

// Count is "1 server" or "3 servers".
func Count[T ~int | ~int32 | ~int64 | ~uint64](n T, one, many string) string {
	return fmt.Sprintf("%d %s", n, PluralVerb(n, one, many))
}

// CountOf is "1 of 1 server" or "2 of 3 servers": the noun agrees with the total.
func CountOf[T ~int | ~int32 | ~int64 | ~uint64](n, total T, one, many string) string {
	return fmt.Sprintf("%d of %s", n, Count(total, one, many))
}

// AvailableText is "1 of 3 servers is available" or "2 of 3 servers are available".
func AvailableText[T ~int | ~int32 | ~int64 | ~uint64](n, total T, one, many string) string {
	return fmt.Sprintf("%s %s available", CountOf(n, total, one, many), PluralVerb(n, "is", "are"))
}

// PluralVerb is the verb (or word) that goes with n things.
func PluralVerb[T ~int | ~int32 | ~int64 | ~uint64](n T, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// PerSecond is a rate as people read it: whole from 10 up, one decimal below, two below 0.1.
func PerSecond(x float64) string {
	switch a := math.Abs(x); {
	case a >= 10:
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	case a >= 0.1:
		return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64)
	default:
		return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
	}
}
