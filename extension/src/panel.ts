/** The side panel: the approvals waiting for a person (approvals-ui.ts). */
import { mountApprovals } from "./approvals-ui.js";

mountApprovals(document.getElementById("approvals")!, "panel");
