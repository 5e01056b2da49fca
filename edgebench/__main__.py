from edgebench.cli import main

main()
