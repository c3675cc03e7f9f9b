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

// Command grpc-health-probe checks a gRPC server's health service, as the upstream
// grpc_health_probe does for the catalog pods OLM runs (exit 0 when SERVING).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "", "host:port of the gRPC server")
	service := flag.String("service", "", "service name to check (empty: the server)")
	connectTimeout := flag.Duration("connect-timeout", time.Second, "timeout of the connection")
	rpcTimeout := flag.Duration("rpc-timeout", time.Second, "timeout of the health check")
	flag.Parse()
	if *addr == "" {
		fmt.Fprintln(os.Stderr, "-addr is required")
		os.Exit(2)
	}
	// passthrough, as upstream's grpc.Dial: the address goes to the dialer as it is. NewClient's
	// default DNS resolver would also look up a TXT record for a service config, and a catalog
	// pod whose NetworkPolicy denies all egress (OLM's <catalog>-grpc-server) waits for that
	// query past the probe's timeout.
	conn, err := grpc.NewClient("passthrough:///"+*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(2)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *connectTimeout+*rpcTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		fmt.Fprintln(os.Stderr, "health check:", err)
		os.Exit(3)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		fmt.Fprintln(os.Stderr, "status:", resp.GetStatus())
		os.Exit(4)
	}
	fmt.Println("status: SERVING")
}
