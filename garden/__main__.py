from garden.cli import main

raise SystemExit(main())
