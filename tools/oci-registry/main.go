// The test suite's local OCI registry: go-containerregistry's in-memory registry (the one
// `crane registry serve` runs) with the OCI 1.1 referrers API switched on, which crane's
// command does not offer. Development tooling only (tools/registry/launcher.ts builds and starts it).
//
// It prints `LISTENING host:port` on stdout once it accepts connections, and exits when its
// standard input closes, so it never outlives the process that started it.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "host:port to listen on (port 0: any free port)")
	verbose := flag.Bool("verbose", false, "log every request on stderr")
	flag.Parse()

	listener, err := net.Listen("tcp", *address)
	if err != nil {
		fmt.Printf("REFUSED listen %s\n", err)
		os.Exit(3)
	}
	logger := log.New(io.Discard, "", 0)
	if *verbose {
		logger = log.New(os.Stderr, "oci-registry: ", log.LstdFlags)
	}
	server := &http.Server{
		Handler:           registry.New(registry.WithReferrersSupport(true), registry.Logger(logger)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		// Exit with the parent: its end of our stdin closes when it exits, however it exits.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("LISTENING %s\n", listener.Addr().String())
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "oci-registry: %s\n", err)
		os.Exit(1)
	}
}
