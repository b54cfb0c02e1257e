//! Scan engine (filters and pushdown arrive with the scan issue).
