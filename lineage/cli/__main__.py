from lineage.cli import console

console()
