// Command peer is the tests' client of the updater's socket, run as another
// user: it sends its standard input and prints what the updater answers,
// until it closes the connection. A failed connect prints "dial: ERROR" and
// exits 2.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	conn, err := net.DialTimeout("unix", os.Args[1], 5*time.Second)
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(2)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	in, _ := io.ReadAll(os.Stdin)
	_, _ = conn.Write(in)
	_, _ = io.Copy(os.Stdout, conn)
}
