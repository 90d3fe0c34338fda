// Command docket is Docket's command-line interface.
package main

func main() {}
