"""Provider adapters, one module each, imported by the registry only when used."""
