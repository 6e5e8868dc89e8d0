"""Working with a whole class at once: what is compared, ranked and reported across students."""
