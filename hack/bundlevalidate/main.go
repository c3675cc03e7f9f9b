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

// Command bundlevalidate runs the optional validators that `operator-sdk bundle validate
// --select-optional suite=operatorframework` runs (operatorhubv2, capabilities, categories,
// alpha-deprecated-apis, good-practices), from the operator-framework/api version of the
// operator's go.mod rather than the older one operator-sdk 1.42.3 embeds: that one's
// alpha-deprecated-apis check flags any RBAC rule on events.k8s.io events as the removed
// v1beta1 API (operator-framework/api#378, fixed since). Any warning or error fails.
//
//	go run ./hack/bundlevalidate -dir bundle
package main

import (
	"flag"
	"fmt"
	"os"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

func main() {
	dir := flag.String("dir", "bundle", "the bundle folder")
	flag.Parse()
	bundle, err := apimanifests.GetBundleFromDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundlevalidate:", err)
		os.Exit(1)
	}
	objs := bundle.ObjectsToValidate()
	for _, obj := range bundle.Objects {
		objs = append(objs, obj)
	}
	objs = append(objs, map[string]string{})
	suite := []interfaces.Validator{
		apivalidation.OperatorHubV2Validator, apivalidation.StandardCapabilitiesValidator, apivalidation.StandardCategoriesValidator,
		apivalidation.AlphaDeprecatedAPIsValidator, apivalidation.GoodPracticesValidator,
	}
	found := 0
	for _, v := range suite {
		for _, result := range v.Validate(objs...) {
			for _, e := range append(result.Errors, result.Warnings...) {
				level := "warning"
				if e.Level == errors.LevelError {
					level = "error"
				}
				fmt.Printf("%s: %s: %s\n", level, result.Name, e.Error())
				found++
			}
		}
	}
	if found > 0 {
		os.Exit(1)
	}
	fmt.Printf("bundle %s passes the operatorframework suite of operator-framework/api\n", *dir)
}
