from hts.cli import main

raise SystemExit(main())
