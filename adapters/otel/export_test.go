package otel

// CatalogNames lists every catalog fact for the external tests, so they
// drive every instrument.
func CatalogNames() []string {
	names := make([]string, 0, len(catalog))
	for _, f := range catalog {
		names = append(names, f.Name)
	}
	return names
}
