"""The floor view: faust-streaming agents folding the committed outputs and the
`table-state` changelog into per-table Faust tables, served as live pages. Faust lives only here."""
