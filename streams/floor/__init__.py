"""The floor view (issue 13): faust-streaming agents folding the committed outputs and the
`table-state` changelog into per-table Faust tables, served as live pages. Faust lives only here."""
