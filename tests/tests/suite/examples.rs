//! Example plugins (filled in below).
