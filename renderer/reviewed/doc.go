// Package reviewed is the reviewed list of the review workflow: what solar
// diff --write-reviewed saw a push would write (per chart its repository,
// version and the digest that pins its content, tokens aside), and the
// check solar push --reviewed makes so that it writes exactly that.
package reviewed
