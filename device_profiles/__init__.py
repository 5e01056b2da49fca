"""Device profiles (one TOML per chip or board), shipped as package data."""
