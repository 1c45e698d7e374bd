// Package load reads SolAr objects from YAML and JSON files.
//
// It takes file and directory paths (directories are walked recursively for .yaml,
// .yml and .json files) and returns every object with its file, its line, and the
// line and column of each of its fields, plus the problems found: YAML syntax
// errors (at the line and column where the file stops being YAML), documents
// that are not objects, duplicate kind/namespace/name (at metadata.name). Multi-document
// files and kind: List (as kubectl get -o yaml prints it) are read object by
// object. Objects without metadata.namespace take Options.Namespace, as kubectl
// does; server-set fields of exported objects (status, metadata.uid,
// managedFields, ...) are dropped.
//
//	objs, problems := load.Paths([]string{"examples/"}, load.Options{Namespace: "default"})
//	for _, p := range problems {
//		fmt.Println(p) // examples/a.yaml:3:3: metadata.name: ...
//	}
package load
