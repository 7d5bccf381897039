/** What every operator route declares: admin console sessions only (RouteSpec.operatorOnly). */
export const OPERATOR = { scope: 'account:read', tag: 'Operator', extension: true, operatorOnly: true } as const;
export const OPERATOR_NOTE = 'Admin console session only: 403 operator_only for members and API keys.';
