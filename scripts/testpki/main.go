// Command solar-testpki makes the test services' secrets without openssl or
// htpasswd. (Placeholder: being written.)
package main

func main() {}
