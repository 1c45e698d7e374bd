// Package verify walks the chart repositories of a store and checks what
// solar promises of them (plain versions, every manifest and blob whole,
// bootstrap charts naming release charts the store holds, the namespace
// indexes, and with a key the signatures Flux checks): solar verify.
package verify
