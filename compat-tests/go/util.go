package main

import (
	"bytes"
	"io"
	"net"
	"strconv"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func splitHostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}
