import Glibc
import KeepsakeCLI

exit(KeepsakeCLI.main())
