"""Version tag of the built-in model generators."""

# Bump whenever any generator changes the bytes it produces: the tag is part of the cache file
# name, so a bump invalidates previously cached models.
GENERATOR_VERSION = "1"
