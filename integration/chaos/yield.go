//go:build !dstyield

package main

import "github.com/brokerpath/brokerpath/pathdialer"

// yieldPoints is false in ordinary builds (see yield_dst.go).
const yieldPoints = false

func installYield(*pathdialer.Path) {}
func removeYield(*pathdialer.Path)  {}
