// Package doccheck holds the tests that keep README.md and the guides in docs/ true to the
// code; it has no code of its own.
//
// Its tests fail when:
//
//   - a fenced go or json block in README.md or docs/*.md has no source, or differs from it.
//     A block names its source on the line before it, as an HTML comment that Markdown does
//     not render:
//
//     <!-- source: examples/first-service/appsettings.json -->
//     <!-- source: examples/first-service/main.go#load -->
//
//     The first form is a whole file; the second the lines of a Go file between
//     "// docs:begin load" and "// docs:end load", less their common indentation (markers of
//     other regions inside it are left out). The sources are programs, example tests and
//     files that the test suite compiles, runs or loads, so a guide's code cannot drift from
//     code that works;
//
//   - a relative link or an anchor in those files leads nowhere;
//
//   - README.md grows past 350 lines, or a guide in docs/ is not linked from it.
//
// The configuration reference (docs/configuration.md) is checked against the schema by
// config's own tests, and the metrics table (docs/operating.md) by observe's.
package doccheck
